"""`sco contracts sync-admission`: verified bundle in, ConfigMap and job_submit.lua data out (ADR-04)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from controllers.admission.policy import DEFAULT_DIR
from sco.cli import main

from .helpers import sync_args


def test_the_configmap_lists_every_published_kubernetes_contract_version(signed: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cm.yaml"
    assert main(sync_args(signed, "r1/k8s-prod", "--configmap-out", str(out))) == 0
    cm = yaml.safe_load(out.read_text())
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["namespace"] == "sco-system"
    assert cm["data"]["recommendation-serving.v3"] == "recommendation-serving@3"
    assert len(cm["data"]) == 7 and cm["metadata"]["annotations"]["sco.io/partition"] == "r1/k8s-prod"
    example = yaml.safe_load((DEFAULT_DIR / "configmap.example.yaml").read_text())
    assert example["data"] == cm["data"]  # the shipped example is what the example repository produces
    assert "7 published Kubernetes contract version(s)" in capsys.readouterr().out


def test_the_lua_data_file_lists_the_slurm_contracts_and_reclaimable_partitions(signed: Path, tmp_path: Path) -> None:
    out = tmp_path / "sco-admission.txt"
    assert main(sync_args(signed, "r1/slurm-hpc", "--lua-out", str(out), "--reclaimable-partition", "reclaimable",
                          "--reclaimable-partition", "spot")) == 0
    lines = [x for x in out.read_text().splitlines() if not x.startswith("#")]
    assert lines[:2] == ["reclaimable_partition reclaimable", "reclaimable_partition spot"]
    assert "contract genomics-align@5" in lines and "contract pytorch-llm-finetune@2" in lines
    assert not any("recommendation-serving" in x for x in lines)


def test_a_tampered_bundle_is_refused_and_nothing_is_written(signed: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "bundles"
    shutil.copytree(signed / "bundles", copy)
    bundle = copy / "r1" / "k8s-prod" / "controller-bundle.json"
    bundle.write_bytes(bundle.read_bytes().replace(b"recommendation-serving@3", b"recommendation-serving@4"))
    out = tmp_path / "cm.yaml"
    args = ["contracts", "sync-admission", "--bundle", str(bundle), "--key", str(signed / "keys" / "signing.pub.pem"),
            "--governance-key", str(signed / "keys" / "governance.pub.pem"), "--configmap-out", str(out)]
    assert main(args) == 1
    assert "refusing to sync admission" in capsys.readouterr().err
    assert not out.exists()


def test_asking_for_no_output_is_a_usage_error(signed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(sync_args(signed, "r1/k8s-prod")) == 2
    assert "--configmap-out" in capsys.readouterr().err


def test_an_agent_bundle_is_refused_with_the_fix(signed: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    args = sync_args(signed, "r1/k8s-prod", "--configmap-out", str(tmp_path / "x.yaml"))
    args[args.index("--bundle") + 1] = str(signed / "bundles" / "r1" / "k8s-prod" / "agent-bundle.json")
    assert main(args) == 2
    assert "controller-bundle.json" in capsys.readouterr().err
