"""``sco controller run --distributor-url … --distributor-token-file …``: the real controller process reads its
own bundle from the real distributor as the controller role. At start a newer generation there, verified like
``--bundle``, is the one in force (its new workload is placed); a forged one is refused with its code and
``--bundle`` stays in force (that workload's work is refused); a generation published while it runs is taken
between two passes and placed by the following ones. Without a credential for the distributor the command
refuses to start and says which option is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.signing import generate_keypair
from controllers.providers.simulated import SimulatedProvider
from distributor import CONTROLLER_FILES
from testkit.builders import PARTITION
from testkit.paths import REPO
from tests.controllers.controller.test_process_faults import region_url  # noqa: F401 (a fixture)
from tests.distributor.test_controller_feed import Publisher, etl, forged, serve, train
from tests.distributor.test_server import Running


def _argv(tmp: Path, pub: Publisher, bundle_dir: Path, region: str, postgres: str, *extra: str,
          passes: int = 6) -> list[str]:
    (tmp / "signing.pub").write_bytes(pub.signing.public_pem)
    (tmp / "governance.pub").write_bytes(pub.governance.public_pem)
    items = [{"source": "slurm", "item_id": f"{w[0]}{n}", "contract_ref": f"{w}@1", "vcpu": 4, "memory_gib": 16,
              "state": "pending"} for w in ("etl", "train") for n in range(6)]
    (tmp / "claims.json").write_text(json.dumps(items))
    return [sys.executable, "-m", "sco", "controller", "run", "--partition", PARTITION, "--bundle",
            str(bundle_dir / CONTROLLER_FILES[0]), "--pubkey", str(tmp / "signing.pub"), "--governance-key",
            str(tmp / "governance.pub"), "--sim-url", region, "--postgres", postgres, "--claims-file",
            str(tmp / "claims.json"), "--interval", "0.2", "--recovery-share", "1", "--holder", "controller-refresh",
            "--passes", str(passes), *extra]


def _run(tmp: Path, pub: Publisher, bundle_dir: Path, region: str, postgres: str, *extra: str,
         passes: int = 6) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_argv(tmp, pub, bundle_dir, region, postgres, *extra, passes=passes), cwd=REPO,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "SCO_DEBUG": "1"})


def _placed(region: str) -> set[str]:
    return {i.owner.workload for i in SimulatedProvider(region, region="r1").list_instances() if i.owner}


@pytest.mark.parametrize("case", ["newer", "forged"])
def test_at_start_a_newer_distributor_bundle_is_in_force_and_a_forged_one_is_refused(
        tmp_path: Path, region_url: str, pg_migrated_url: str, case: str) -> None:  # noqa: F811
    pub = Publisher(tmp_path / "compiled", generate_keypair(), generate_keypair())
    g1 = pub.compile(etl())
    held = tmp_path / "held"
    serve(held, g1)                                  # --bundle: generation 1 (etl only)
    g2 = pub.compile(etl(), train())
    (tmp_path / "dist").mkdir()
    serve(tmp_path / "dist", g2 if case == "newer" else forged(g2))
    (tmp_path / "token").write_text("ctl-token\n")
    distributor = Running(tmp_path / "dist", [datetime.now(UTC)])
    try:
        done = _run(tmp_path, pub, held / PARTITION, region_url, pg_migrated_url, "--distributor-url",
                    distributor.url, "--distributor-token-file", str(tmp_path / "token"))
    finally:
        distributor.close()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert distributor.server.responses[401] == 0 and distributor.server.responses[200] >= 2
    if case == "newer":
        assert "controller bundle generation 2 taken from" in done.stdout, out[-3000:]
        assert _placed(region_url) == {"etl", "train"}
    else:
        assert "BND001: controller bundle from" in done.stdout and "--bundle generation 1 is in force" in done.stdout
        assert _placed(region_url) == {"etl"}, "the forged bundle's workload is not placed"


def test_a_generation_published_while_the_controller_runs_is_taken_between_passes_and_placed(
        tmp_path: Path, region_url: str, pg_migrated_url: str) -> None:  # noqa: F811
    pub = Publisher(tmp_path / "compiled", generate_keypair(), generate_keypair())
    g1 = pub.compile(etl())
    serve(tmp_path / "held", g1)
    serve(tmp_path / "dist", g1)
    g2 = pub.compile(etl(), train())
    (tmp_path / "token").write_text("ctl-token\n")
    distributor = Running(tmp_path / "dist", [datetime.now(UTC)])
    lines: list[str] = []
    proc = subprocess.Popen(_argv(tmp_path, pub, tmp_path / "held" / PARTITION, region_url, pg_migrated_url,
                                  "--distributor-url", distributor.url, "--distributor-token-file",
                                  str(tmp_path / "token"), passes=30),
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "SCO_DEBUG": "1"})
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("pass 3:"):
                assert _placed(region_url) == {"etl"}, "generation 1 in force: train's work is refused"
                serve(tmp_path / "dist", g2)          # published while the controller runs
        assert proc.wait(timeout=300) == 0, "".join(lines)[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        distributor.close()
    out = "".join(lines)
    taken = [n for n, line in enumerate(lines) if "controller bundle taken: generation 2 in force" in line]
    assert len(taken) == 1, out[-3000:]
    assert any(line.startswith("pass ") for line in lines[taken[0]:]), "passes ran after the swap"
    assert _placed(region_url) == {"etl", "train"}


def test_a_distributor_url_without_a_controller_credential_is_refused_with_the_option_to_give(
        tmp_path: Path) -> None:
    pub = Publisher(tmp_path / "compiled", generate_keypair(), generate_keypair())
    serve(tmp_path / "held", pub.compile(etl()))
    done = _run(tmp_path, pub, tmp_path / "held" / PARTITION, "http://127.0.0.1:1", "postgresql://unused@127.0.0.1:1/x",
                "--distributor-url", "http://127.0.0.1:1", passes=1)
    assert done.returncode != 0 and "--distributor-token-file" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
