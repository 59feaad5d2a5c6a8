"""A real ``sco-agent run`` refreshes its bundle from the distributor with its own credential (HTTP Basic as
``agent.<region>.<instance>``, the password its cloud-config wrote) and then asks with ``If-None-Match``; an
agent with a wrong password gets nothing and counts the failures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.signing import KeyPair
from distributor import PasswordTable, digest
from sco.demo.kubeapi import KubeApiDouble
from testkit.paths import REPO
from tests.agent.helpers import agent_config, make_bundle, new_keys, node_identity, workload_entry, write_bundle_dir
from tests.distributor.test_server import Running
from tests.support.ports import free_port

NODE = node_identity(node="kn1", instance="i-kn1", scheduler="kubernetes", partition="r1/k8s-batch")


def _metrics(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as resp:
            return str(resp.read().decode())
    except OSError:
        return ""


def _until(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


@pytest.fixture(autouse=True)
def _node(request: pytest.FixtureRequest) -> None:
    """Node ``kn1`` in the Kubernetes API double, for every test that uses it."""
    if "kube" in request.fixturenames:
        kube: KubeApiDouble = request.getfixturevalue("kube")
        kube.put_object("Node", {"metadata": {"name": "kn1"}, "spec": {}})


@contextmanager
def _serving_generation_2(tmp: Path, keys: KeyPair) -> Iterator[Running]:
    """A distributor serving the partition's generation-2 bundle to agent ``i-kn1`` (password ``pw-kn1``)."""
    raw, sig = make_bundle(keys, NODE.partition, 2, [workload_entry("web", scheduler="kubernetes")])
    write_bundle_dir(tmp / "bundles" / "r1" / "k8s-batch", raw, sig)
    running = Running(tmp / "bundles", [datetime.now(UTC)])
    running.server.auth = PasswordTable(users={"agent.r1.i-kn1": (digest("pw-kn1"), "agent")})
    try:
        yield running
    finally:
        running.close()


def _agent(tmp: Path, keys: KeyPair, distributor: str, password: str,
           kube: KubeApiDouble) -> tuple[subprocess.Popen[bytes], int]:
    raw, sig = make_bundle(keys, NODE.partition, 1, [workload_entry("web", scheduler="kubernetes")])
    cfg, _, _ = agent_config(tmp, keys, NODE, (raw, sig), distributor_url=distributor)
    (tmp / "nats.password").write_text(password + "\n")
    (tmp / "kube.token").write_text("node-bound")
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SCO_AGENT_")},
           "SCO_AGENT_NATS_PASSWORD_FILE": str(tmp / "nats.password"), "SCO_AGENT_REFRESH_S": "0.2",
           "SCO_AGENT_KUBE_API": kube.url, "SCO_AGENT_KUBE_TOKEN_FILE": str(tmp / "kube.token"),
           "SCO_AGENT_SPOOL_FSYNC": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "agent.cli", "run", "--userdata", str(cfg.userdata),
                             "--public-key", str(cfg.public_key), "--state-dir", str(cfg.state_dir),
                             "--metrics-port", str(port)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc, port


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out.decode()[-2000:]


def test_the_agent_fetches_a_newer_bundle_with_its_own_credential_then_asks_with_its_etag(
        tmp_path: Path, kube: KubeApiDouble) -> None:
    keys = new_keys()
    with _serving_generation_2(tmp_path, keys) as running:
        proc, port = _agent(tmp_path / "good", keys, f"{running.url}/r1/k8s-batch/", "pw-kn1", kube)
        try:
            _until("the agent holds generation 2", lambda: "\nsco_agent_bundle_generation 2" in _metrics(port))
            _until("the agent asks with If-None-Match", lambda: running.server.responses[304] >= 2)
            assert "\nsco_agent_bundle_age_seconds " in _metrics(port)
            assert running.server.responses[401] == 0
        finally:
            _stop(proc)


def test_an_agent_with_a_wrong_password_gets_no_bundle_and_counts_the_failures(tmp_path: Path,
                                                                                kube: KubeApiDouble) -> None:
    keys = new_keys()
    with _serving_generation_2(tmp_path, keys) as running:
        proc, port = _agent(tmp_path / "bad", keys, f"{running.url}/r1/k8s-batch/", "not-the-password", kube)
        try:
            _until("the distributor refused the agent", lambda: running.server.responses[401] >= 2)
            _until("the agent counted failed refreshes",
                   lambda: "\nsco_agent_bundle_refresh_failures_total 0" not in _metrics(port)
                   and "sco_agent_bundle_refresh_failures_total" in _metrics(port))
            assert "\nsco_agent_bundle_generation 1" in _metrics(port)
            assert running.server.responses[200] == 0
        finally:
            _stop(proc)
