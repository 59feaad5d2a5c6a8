"""The end-to-end alert (ADR-28), with real processes: Debian's Prometheus scrapes a running controller (`sco
controller run` on the simulated region, with its bearer-token metrics endpoint) and a running agent
(`sco-agent run`); a reclaim notice in the simulated region puts the workload above the interruption rate its
contract declares; the repository's rule SCOContractBreach fires; Debian's Alertmanager, configured with the
route tree `sco contracts compile` generated from the contracts, delivers it to the contract owner's webhook —
a small HTTP server in this test that records what it receives."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from contracts.alerting import ROUTES_FILE
from controllers.providers.simulated import SimulatedProvider
from sco.demo.kubeapi import KubeApiDouble
from testkit.nats import NatsProcess
from testkit.paths import REPO
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, workload_entry
from tests.support.cli import sco
from tests.support.ports import free_port
from tests.support.testbeds import tool

pytestmark = [pytest.mark.testbed, pytest.mark.services, pytest.mark.slow]
EXAMPLE = REPO / "deploy" / "contracts"
WORKLOAD, OWNER = "genomics-align", "priya.nair@example.org"
PARTITION = "r1/slurm-hpc"
TOKEN = "e2e-metrics-token-0123456789"


class Hook:
    """The incident platform's webhook, as far as the test needs it: every POST recorded by path."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.received.append((self.path, json.loads(body or b"{}")))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self, path: str) -> list[dict[str, Any]]:
        return [a for p, doc in list(self.received) if p == path for a in doc.get("alerts", [])]


def _wait(what: str, ok: Callable[[], bool], limit: float, logs: list[Path]) -> None:
    deadline = time.monotonic() + limit
    while not ok():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in logs if p.exists())
            raise AssertionError(f"{what} within {limit:.0f} s\n{tails}")
        time.sleep(0.5)


def _get(url: str, token: str | None = None) -> str:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return str(resp.read().decode())


def _spawn(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env or dict(os.environ))


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in reversed(started):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(started):
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def _compile(tmp: Path, hook: Hook) -> Path:
    repo = tmp / "contracts"
    (repo / "workloads").mkdir(parents=True)
    shutil.copy(EXAMPLE / "pools.csv", repo / "pools.csv")
    shutil.copy(EXAMPLE / "workloads" / f"{WORKLOAD}.yaml", repo / "workloads" / f"{WORKLOAD}.yaml")
    assert sco("keys", "init", "--dir", str(tmp / "keys")).returncode == 0
    out = sco("contracts", "compile", str(repo), "--out", str(tmp / "out"), "--key", str(tmp / "keys" /
              "signing.key.pem"), "--governance-key", str(tmp / "keys" / "governance.key.pem"),
              "--alert-webhook", hook.url)
    assert out.returncode == 0, out.stdout + out.stderr
    return tmp / "out"


def _alertmanager(tmp: Path, routes: Path, port: int) -> list[str]:
    config = yaml.safe_load(routes.read_text())
    config["route"].update(group_wait="1s", group_interval="1s")  # the tree as generated; only the timing is short
    (tmp / "am.yml").write_text(yaml.safe_dump(config))
    return [tool("alertmanager"), f"--config.file={tmp / 'am.yml'}", f"--storage.path={tmp / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]


def _rules_with_short_holds(tmp: Path) -> Path:
    """The rules as shipped, but every ``for:`` hold cut to 2 s (the breach rule holds 1 min: promtool's tests in
    tests/deploy/monitoring check the holds themselves; this test checks the path the page takes)."""
    rules = yaml.safe_load((REPO / "deploy" / "monitoring" / "rules" / "sco-alerts.yml").read_text())
    held = [rule for group in rules["groups"] for rule in group["rules"] if "for" in rule]
    assert any(r.get("alert") == "SCOContractBreach" for r in held)
    for rule in held:
        rule["for"] = "2s"
    (tmp / "sco-alerts.yml").write_text(yaml.safe_dump(rules))
    return tmp / "sco-alerts.yml"


def _prometheus(tmp: Path, port: int, am_port: int, controller_port: int, agent_port: int) -> list[str]:
    (tmp / "token").write_text(TOKEN)
    (tmp / "token").chmod(0o600)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(_rules_with_short_holds(tmp))],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
        "scrape_configs": [
            {"job_name": "sco-controller", "authorization": {"type": "Bearer", "credentials_file": str(tmp / "token")},
             "static_configs": [{"targets": [f"127.0.0.1:{controller_port}"]}]},
            {"job_name": "sco-agent", "static_configs": [{"targets": [f"127.0.0.1:{agent_port}"]}]},
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    return [tool("prometheus"), f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}"]


def _query(port: int, expr: str) -> list[dict[str, Any]]:
    doc = json.loads(_get(f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    return list(doc["data"]["result"])


def test_a_contract_breach_in_the_simulated_region_pages_the_contracts_owner_through_prometheus_and_alertmanager(
        tmp_path: Path, nats_server: NatsProcess, pg_migrated_url: str,
        procs: list[subprocess.Popen[bytes]]) -> None:
    hook = Hook()
    out = _compile(tmp_path, hook)
    logs = [tmp_path / n for n in ("region.log", "controller.log", "agent.log", "prometheus.log", "am.log")]
    region_port, controller_port, agent_port, prom_port, am_port = (free_port() for _ in range(5))
    procs.append(_spawn([sys.executable, "-m", "sco", "sim", "region", "serve", "--no-auth", "--port", str(region_port),
                         "--nats",
                         nats_server.url, "--seed", "7", "--set", "reclaim_rate_pct_h=0", "--set",
                         "hall_reclaims_per_30d=0", "--set", "bursts_per_aggregate_day=0"], logs[0]))
    region = SimulatedProvider(f"http://127.0.0.1:{region_port}", region="r1")

    def region_up() -> bool:
        try:
            region.quota_headroom()
            return True
        except Exception:
            return False

    _wait("the simulated region answers", region_up, 60, logs)
    items = [{"source": "slurm", "item_id": f"g{n}", "contract_ref": f"{WORKLOAD}@5", "vcpu": 32, "memory_gib": 128,
              "state": "pending"} for n in range(4)]
    (tmp_path / "claims.json").write_text(json.dumps(items))
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "token").chmod(0o600)
    bundle = out / "r1" / "slurm-hpc" / "controller-bundle.json"
    procs.append(_spawn([sys.executable, "-m", "sco", "controller", "run", "--partition", PARTITION, "--bundle",
                         str(bundle), "--pubkey", str(tmp_path / "keys" / "signing.pub.pem"), "--governance-key",
                         str(tmp_path / "keys" / "governance.pub.pem"), "--sim-url",
                         f"http://127.0.0.1:{region_port}", "--postgres", pg_migrated_url, "--claims-file",
                         str(tmp_path / "claims.json"), "--interval", "0.5",
                         "--recovery-share", "1", "--nats", nats_server.url, "--holder", "controller-e2e",
                         "--metrics-port", str(controller_port), "--metrics-token-file", str(tmp_path / "token")],
                        logs[1]))
    keys, node = new_keys(), node_identity(node="kn1", instance="i-kn1", scheduler="kubernetes",
                                           partition="r1/k8s-batch")
    cfg, _, _ = agent_config(tmp_path / "agent", keys, node, make_bundle(keys, node.partition, 1,
                                                                         [workload_entry("web", budget=3)]),
                             nats_url=nats_server.url)
    (tmp_path / "kube-token").write_text("node-bound")
    with KubeApiDouble() as kube:
        kube.put_object("Node", {"metadata": {"name": "kn1"}, "spec": {}})
        env = {**os.environ, "SCO_AGENT_KUBE_API": kube.url, "SCO_AGENT_KUBE_TOKEN_FILE": str(tmp_path / "kube-token"),
               "SCO_AGENT_LOCAL_DRAIN_COMMAND": "true", "SCO_AGENT_SPOOL_FSYNC": "0"}
        procs.append(_spawn([sys.executable, "-m", "agent.cli", "run", "--userdata", str(cfg.userdata),
                             "--public-key", str(cfg.public_key), "--state-dir", str(cfg.state_dir),
                             "--metrics-port", str(agent_port)], logs[2], env))
        procs.append(_spawn(_alertmanager(tmp_path, out / ROUTES_FILE, am_port), logs[4]))
        procs.append(_spawn(_prometheus(tmp_path, prom_port, am_port, controller_port, agent_port), logs[3]))

        def launched() -> list[str]:
            return [i.instance_id for i in region.list_instances() if i.owner and i.owner.workload == WORKLOAD]

        _wait("the controller launches the workload", lambda: len(launched()) >= 4, 240, logs)

        def scraped() -> bool:
            try:
                up = {r["metric"]["job"]: r["value"][1] for r in _query(prom_port, "up")}
                info = _query(prom_port, f'sco_contract_info{{workload="{WORKLOAD}"}}')
            except OSError:
                return False
            return up == {"sco-controller": "1", "sco-agent": "1"} and bool(info)

        _wait("Prometheus scrapes the controller (with its token) and the agent", scraped, 240, logs)
        assert not hook.alerts(f"/hook/owner/{OWNER}"), "no breach before the notice"
        victim = launched()[0]
        req = urllib.request.Request(f"http://127.0.0.1:{region_port}/v1/reclaim", method="POST",
                                     data=json.dumps({"instances": [victim], "drill": False}).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()

        def paged() -> bool:
            return any(a["labels"].get("alertname") == "SCOContractBreach" and a["status"] == "firing"
                       for a in hook.alerts(f"/hook/owner/{OWNER}"))

        _wait("Alertmanager delivers SCOContractBreach to the owner's webhook", paged, 300, logs)
    alert = next(a for a in hook.alerts(f"/hook/owner/{OWNER}") if a["labels"]["alertname"] == "SCOContractBreach")
    assert alert["labels"]["workload"] == WORKLOAD and alert["labels"]["team"] == "owner"
    assert alert["labels"]["owner"] == OWNER and alert["labels"]["partition"] == PARTITION
    assert alert["annotations"]["runbook_url"] == "docs/operations.md#scocontractbreach"
    breach = [a for p, doc in hook.received if p == "/hook/platform" for a in doc.get("alerts", [])
              if a["labels"].get("alertname") == "SCOContractBreach"]
    assert breach == [], "a contract breach is the owner's, never the platform's"
    metrics = _get(f"http://127.0.0.1:{controller_port}/metrics", TOKEN)
    series = f'partition="{PARTITION}",region="r1",workload="{WORKLOAD}"'
    assert f"sco_controller_interruption_rate_pct_per_hour{{{series}}}" in metrics
