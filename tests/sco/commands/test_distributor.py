"""``sco distributor serve`` as an operator runs it: the compiled bundles behind the stack's credentials (each
minted agent as its own user, the controller by its password or bearer token), an agent minted while it runs
let in at once, and one-line errors for a wrong start."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.httpwire import exchange
from sco.stack import credentials as creds_mod
from testkit.paths import REPO
from tests.agent.helpers import make_bundle, new_keys, workload_entry, write_bundle_dir
from tests.support.cli import sco
from tests.support.exposition import parse


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _mint(home: Path, key: str, password: str) -> None:
    creds = creds_mod.load_or_create(home)
    creds = replace(creds, agents={**creds.agents, key: password})
    creds_mod.write_private(home / creds_mod.CREDENTIALS_FILE, creds.to_json())


def test_serve_admits_the_stack_agents_and_controller_and_follows_new_mints(tmp_path: Path) -> None:
    home = tmp_path / ".sco"
    home.mkdir()
    _mint(home, "r1/i-1", "pw-1")
    controller = creds_mod.load_or_create(home).nats["controller"]
    keys = new_keys()
    raw, sig = make_bundle(keys, "r1/slurm-hpc", 1, [workload_entry("etl")])
    write_bundle_dir(tmp_path / "out" / "r1" / "slurm-hpc", raw, sig)
    (tmp_path / "out" / "r1" / "slurm-hpc" / "controller-bundle.json").write_text(json.dumps({"generation": 1}))
    proc = subprocess.Popen([sys.executable, "-m", "sco", "distributor", "serve", "--bundles", str(tmp_path / "out"),
                             "--port", "0", "--home", str(home)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "SCO_LOG_FORMAT": "json"})
    try:
        assert proc.stdout is not None
        started = json.loads(proc.stdout.readline())  # its log lines are JSON, as the manifests ask
        assert started["component"] == "distributor-serve" and started["level"] == "INFO"
        line = started["message"]
        assert "serving r1/slurm-hpc" in line, line
        url = line.split(" on ", 1)[1].split(" ", 1)[0].rstrip("/")
        agent_path = url + "/r1/slurm-hpc/agent-bundle.json"
        assert exchange("GET", agent_path, headers=_basic("agent.r1.i-1", "pw-1"))[2] == raw
        assert exchange("GET", agent_path, headers=_basic("agent.r1.i-2", "pw-2"))[0] == 401
        _mint(home, "r1/i-2", "pw-2")  # what the controller's launch does through StackAgentCredentials
        assert exchange("GET", agent_path, headers=_basic("agent.r1.i-2", "pw-2"))[0] == 200
        ctl = {"Authorization": f"Bearer {controller}"}
        assert exchange("GET", url + "/r1/slurm-hpc/controller-bundle.json", headers=ctl)[0] == 200
        assert exchange("GET", url + "/r1/slurm-hpc/controller-bundle.json",
                        headers=_basic("controller", controller))[0] == 200
        assert exchange("GET", url + "/r1/slurm-hpc/controller-bundle.json",
                        headers=_basic("agent.r1.i-1", "pw-1"))[0] == 403
        assert "sco_distributor_bundle_age_seconds" in exchange("GET", url + "/metrics", headers=ctl)[2].decode()
    finally:
        proc.terminate()
        rest = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0
    assert all(json.loads(line)["component"] == "distributor-serve" for line in rest.splitlines())


def test_serve_has_the_metrics_port_and_probes_every_long_running_process_has(tmp_path: Path) -> None:
    from tests.support.ports import free_port

    home = tmp_path / ".sco"
    home.mkdir()
    creds_mod.load_or_create(home)
    keys = new_keys()
    raw, sig = make_bundle(keys, "r1/slurm-hpc", 3, [workload_entry("etl")])
    write_bundle_dir(tmp_path / "out" / "r1" / "slurm-hpc", raw, sig)
    token = tmp_path / "token"
    token.write_text("distributor-metrics-token-0123")
    token.chmod(0o600)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sco", "distributor", "serve", "--bundles", str(tmp_path / "out"),
                             "--port", "0", "--home", str(home), "--metrics-port", str(port), "--metrics-host",
                             "127.0.0.1", "--metrics-token-file", str(token)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # serving
        proc.stdout.readline()  # its metrics endpoint
        base = f"http://127.0.0.1:{port}"
        assert exchange("GET", base + "/healthz")[0] == 200 and exchange("GET", base + "/readyz")[0] == 200
        assert exchange("GET", base + "/metrics")[0] == 401
        status, _, body = exchange("GET", base + "/metrics",
                                   headers={"Authorization": "Bearer distributor-metrics-token-0123"})
        assert status == 200
        assert parse(body.decode()).value("sco_distributor_bundle_generation", partition="r1/slurm-hpc",
                                          kind="agent") == 3
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_serve_refuses_to_start_without_a_bundles_directory_or_a_stack(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    missing = sco("distributor", "serve", "--bundles", str(tmp_path / "nope"), "--home", str(tmp_path / ".sco"))
    assert missing.returncode == 2 and "is not a directory" in missing.stderr
    no_stack = sco("distributor", "serve", "--bundles", str(tmp_path / "out"), "--home", str(tmp_path / ".sco"))
    assert no_stack.returncode == 2 and "run `sco up` first" in no_stack.stderr


def test_an_empty_bundles_volume_starts_not_ready_and_turns_ready_when_the_first_release_lands(
        tmp_path: Path) -> None:
    from tests.support.ports import free_port

    home, out, port, token = tmp_path / ".sco", tmp_path / "out", free_port(), tmp_path / "token"
    home.mkdir()
    out.mkdir()
    creds_mod.load_or_create(home)
    token.write_text("distributor-metrics-token-0123")
    token.chmod(0o600)
    proc = subprocess.Popen([sys.executable, "-m", "sco", "distributor", "serve", "--bundles", str(out), "--port",
                             "0", "--home", str(home), "--metrics-port", str(port), "--metrics-host", "127.0.0.1",
                             "--metrics-token-file", str(token)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert any("DIS001" in line and "not ready" in line for line in lines), lines
        base = f"http://127.0.0.1:{port}"
        assert exchange("GET", base + "/healthz")[0] == 200 and exchange("GET", base + "/readyz")[0] == 503
        raw, sig = make_bundle(new_keys(), "r1/slurm-hpc", 1, [workload_entry("etl")])
        write_bundle_dir(out / "r1" / "slurm-hpc", raw, sig)
        assert exchange("GET", base + "/readyz")[0] == 200
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.services
def test_stage_and_rollout_passes_take_a_compile_to_the_canary_then_everywhere_after_the_soak(
        tmp_path: Path, clickhouse_migrated_url: str) -> None:
    from distributor import partition_generation
    from tests.distributor.test_canary import CANARY, OTHERS, PARTITIONS, compile_out

    keys, t0 = new_keys(), "2026-12-01T06:00:00+00:00"
    root = compile_out(tmp_path / "served", keys, 1, datetime(2026, 12, 1, tzinfo=UTC))
    (tmp_path / "compiler.yaml").write_text(f"canary_partition: {CANARY}\ncanary_soak_h: 6\n")
    compile_out(tmp_path / "c2", keys, 2, datetime(2026, 12, 1, 5, tzinfo=UTC))
    staged = sco("distributor", "stage", "--bundles", str(root), "--from", str(tmp_path / "c2"))
    assert staged.returncode == 0 and "staged release 1" in staged.stdout
    again = sco("distributor", "stage", "--bundles", str(root), "--from", str(tmp_path / "c2"))
    assert again.returncode == 2 and "ROL001" in again.stderr and "Traceback" not in again.stderr

    def rollout(at: str, *extra: str) -> str:
        result = sco("distributor", "rollout", "--bundles", str(root), "--settings", str(tmp_path / "compiler.yaml"),
                     "--clickhouse", clickhouse_migrated_url, "--now", at, *extra)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "would StartCanary" in rollout(t0, "--dry-run")
    assert "served to the canary r1/slurm-hpc" in rollout(t0)
    assert "hold — soaking on r1/slurm-hpc: 5.0 h of 6 h" in rollout("2026-12-01T11:00:00+00:00")
    assert all(partition_generation(root / p) == 1 for p in PARTITIONS)
    assert "promoted to every partition" in rollout("2026-12-01T12:00:00+00:00")
    assert all(partition_generation(root / p) == 2 for p in (CANARY, *OTHERS))
    assert "nothing staged" in rollout("2026-12-01T13:00:00+00:00")


def test_a_real_compile_against_the_served_bundles_stages_and_leaves_unchanged_partitions_acceptable(
        tmp_path: Path) -> None:
    import shutil

    from contracts.bundle_verify import verify_bundle_bytes
    from distributor import Releases, StartCanary

    repo, keys, served = tmp_path / "repo", tmp_path / "keys", tmp_path / "served"
    shutil.copytree(REPO / "deploy" / "contracts", repo)
    assert sco("keys", "init", "--dir", str(keys)).returncode == 0
    signing = ("--key", str(keys / "signing.key.pem"), "--governance-key", str(keys / "governance.key.pem"))
    assert sco("contracts", "compile", str(repo), "--out", str(served), *signing).returncode == 0
    ci = repo / "workloads" / "ci-runners.yaml"
    ci.write_text(ci.read_text().replace("version: 9", "version: 10").replace("drain_budget_s: 20",
                                                                             "drain_budget_s: 25"))
    result = sco("contracts", "compile", str(repo), "--out", str(tmp_path / "c2"), "--previous", str(served), *signing)
    assert result.returncode == 0, result.stderr
    releases = Releases(served)
    assert releases.stage(tmp_path / "c2") == 1
    releases.apply([StartCanary(release=1, partition="r1/k8s-prod")], datetime(2026, 12, 1, tzinfo=UTC))
    public = (keys / "signing.pub.pem").read_bytes()

    def header(tree: Path, partition: str) -> tuple[int, str]:
        d = tree / partition
        payload = verify_bundle_bytes((d / "agent-bundle.json").read_bytes(),
                                      (d / "agent-bundle.json.sig").read_bytes(), public).payload
        return int(payload["generation"]), str(payload["source_digest"])

    staged = releases.staged_tree(1)
    changed, unchanged = header(staged, "r1/k8s-prod"), header(staged, "r1/slurm-hpc")
    assert changed[0] == header(served, "r1/k8s-prod")[0] + 1
    assert unchanged == header(served, "r1/slurm-hpc")  # same generation and content: agents take it


def test_a_rollout_pass_without_clickhouse_holds_the_canary_and_says_why(tmp_path: Path) -> None:
    from tests.distributor.test_canary import CANARY, compile_out

    keys = new_keys()
    root = compile_out(tmp_path / "served", keys, 1, datetime(2026, 12, 1, tzinfo=UTC))
    (tmp_path / "compiler.yaml").write_text(f"canary_partition: {CANARY}\n")
    assert sco("distributor", "rollout", "--bundles", str(root), "--settings", str(tmp_path / "compiler.yaml"),
               "--clickhouse", "http://127.0.0.1:9").stdout.startswith("nothing staged")
    compile_out(tmp_path / "c2", keys, 2, datetime(2026, 12, 1, 5, tzinfo=UTC))
    assert sco("distributor", "stage", "--bundles", str(root), "--from", str(tmp_path / "c2")).returncode == 0
    args = ("distributor", "rollout", "--bundles", str(root), "--settings", str(tmp_path / "compiler.yaml"),
            "--clickhouse", "http://127.0.0.1:9")  # nothing listens on the discard port
    assert "served to the canary" in sco(*args, "--now", "2026-12-01T06:00:00+00:00").stdout
    held = sco(*args, "--now", "2026-12-02T07:00:00+00:00")
    assert held.returncode == 0 and "CAN003: the gate figures could not be read" in held.stdout
    bad = sco("distributor", "rollout", "--bundles", str(root), "--now", "yesterday")
    assert bad.returncode == 2 and "--now 'yesterday' is not an ISO-8601 time" in bad.stderr
