"""`sco up && sco status && sco down` from a fresh directory, with nothing installed system-wide."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sco.stack import natsserver, services
from sco.stack.credentials import redact_url
from stores.config import load_urls, resolve_url
from testkit.paths import REPO

SCO = [sys.executable, "-m", "sco.cli"]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sco(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SCO_")}
    environ.update({"SCO_HOME": str(home), **(env or {})})
    return subprocess.run([*SCO, *args], cwd=REPO, env=environ, capture_output=True, text=True, timeout=60)


@pytest.mark.services
def test_sco_up_status_down_on_a_fresh_directory_takes_under_15_seconds_and_up_twice_reuses(
        tmp_path: Path) -> None:
    home = tmp_path / "fresh" / ".sco"
    started, cpu_before = time.monotonic(), _children_cpu_s()
    up = _sco(home, "up", "--json")
    status = _sco(home, "status", "--json")
    down = _sco(home, "down", "--json")
    elapsed, cpu = time.monotonic() - started, _children_cpu_s() - cpu_before
    assert up.returncode == 0, up.stderr
    assert status.returncode == 0, status.stderr
    assert down.returncode == 0, down.stderr
    # The 15 s is checked as CPU (the three commands and what they wait for, initdb included), which other load
    # on the machine cannot inflate; the wall-clock limit only catches a hang.
    assert cpu < 15, f"sco up && sco status && sco down cost {cpu:.1f} s of CPU"
    assert elapsed < 120, f"sco up && sco status && sco down took {elapsed:.1f} s"
    first = {s["name"]: s for s in json.loads(up.stdout)}
    assert {s["state"] for s in first.values()} == {"started"}
    assert {s["state"] for s in json.loads(status.stdout)} == {"running"}
    assert {s["state"] for s in json.loads(down.stdout)} == {"stopped"}
    for svc in first.values():
        assert not services.pid_alive(svc["pid"]), f"{svc['name']} still running after sco down"

    again = _sco(home, "up", "--json")
    twice = _sco(home, "up", "--json")
    try:
        assert again.returncode == 0 and twice.returncode == 0, again.stderr + twice.stderr
        assert {s["state"] for s in json.loads(again.stdout)} == {"started"}  # restarted on the same data
        reused = {s["name"]: s for s in json.loads(twice.stdout)}
        assert {s["state"] for s in reused.values()} == {"reused"}
        assert {n: s["pid"] for n, s in reused.items()} == {s["name"]: s["pid"] for s in json.loads(again.stdout)}
        urls = load_urls(home)
        assert urls.clickhouse is not None and urls.clickhouse.startswith("http://sco:")  # the admin user
        assert "@127.0.0.1:" in urls.clickhouse
        assert urls.clickhouse is not None and urlsplit(urls.clickhouse).hostname == "127.0.0.1"
        assert urlsplit(urls.clickhouse).password  # the front end authenticates: its URL carries a password
        services.stop_pid(reused["clickhouse"]["pid"])  # one server dies: status says so, up restarts only it
        assert _sco(home, "status").returncode == 1
        healed = {s["name"]: s["state"] for s in json.loads(_sco(home, "up", "--json").stdout)}
        assert healed == {"postgres": "reused", "nats": "reused", "clickhouse": "started"}
    finally:
        _sco(home, "down")
    assert _sco(home, "status").returncode == 1  # nothing running now


@pytest.mark.services
def test_a_store_given_by_url_is_used_as_is_and_never_started_or_stopped(tmp_path: Path) -> None:
    home = tmp_path / ".sco"
    nats = natsserver.start_nats(tmp_path / "external-nats")
    try:
        env = {"SCO_NATS_URL": nats.url}
        up = _sco(home, "up", "--json", "--no-migrate", env=env)
        assert up.returncode == 0, up.stderr
        rows = {s["name"]: s for s in json.loads(up.stdout)}
        assert rows["nats"] == {"name": "nats", "url": redact_url(nats.url), "managed": False, "pid": None,
                                "healthy": True, "state": "external"}
        assert rows["postgres"]["state"] == "started"
        down = _sco(home, "down", "--json", env=env)
        assert down.returncode == 0, down.stderr
        assert {s["name"]: s["state"] for s in json.loads(down.stdout)}["nats"] == "external"
        assert services.pid_alive(nats.pid) and services.port_open(nats.port)
    finally:
        _sco(home, "down")
        services.stop_pid(nats.pid)


def test_store_urls_come_from_the_environment_before_the_stack_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "stack.json").write_text(json.dumps({"services": {
        "postgres": {"url": "postgresql://file"}, "clickhouse": {"url": "http://file:1"}}}))
    monkeypatch.delenv("SCO_POSTGRES_URL", raising=False)
    monkeypatch.setenv("SCO_CLICKHOUSE_URL", "http://env:2")
    urls = load_urls(tmp_path)
    assert (urls.postgres, urls.clickhouse, urls.nats) == ("postgresql://file", "http://env:2", None)
    assert resolve_url("postgres", "postgresql://given", tmp_path) == "postgresql://given"
    monkeypatch.delenv("SCO_NATS_URL", raising=False)
    with pytest.raises(RuntimeError, match="SCO_NATS_URL"):
        resolve_url("nats", None, tmp_path)


def test_a_component_gets_its_own_credential_from_the_stack_file_and_an_external_store_as_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "stack.json").write_text(json.dumps({
        "services": {"postgres": {"url": "postgresql://owner@h/sco", "managed": True},
                     "nats": {"url": "nats://admin@h", "managed": True},
                     "clickhouse": {"url": "http://external:1", "managed": False}},
        "components": {"controller": {"postgres": "postgresql://sco_controller@h/sco"}}}))
    for var in ("SCO_POSTGRES_URL", "SCO_NATS_URL", "SCO_CLICKHOUSE_URL"):
        monkeypatch.delenv(var, raising=False)
    mine = load_urls(tmp_path, "controller")
    assert (mine.postgres, mine.nats, mine.clickhouse) == ("postgresql://sco_controller@h/sco", None,
                                                           "http://external:1")
    assert load_urls(tmp_path).postgres == "postgresql://owner@h/sco"
    with pytest.raises(RuntimeError, match="no nats URL for controller"):
        resolve_url("nats", None, tmp_path, component="controller")


def test_sco_clickhouse_serve_refuses_a_missing_data_directory_with_a_clear_error(tmp_path: Path) -> None:
    result = _sco(tmp_path, "clickhouse", "serve")
    assert result.returncode == 2
    assert "--data" in result.stderr and "Traceback" not in result.stderr


def test_up_plans_external_for_a_given_url_reuse_for_a_healthy_server_and_start_otherwise() -> None:
    from sco.stack.manager import plan_up

    records = {"postgres": {"managed": True, "url": "postgresql://x"}, "nats": {"managed": True, "url": "nats://x"},
               "clickhouse": {"managed": False, "url": "http://old"}}
    plan = plan_up(records, {"SCO_CLICKHOUSE_URL": "http://prod:8123"}, {"postgres": True, "nats": False})
    assert plan == {"postgres": "reuse", "nats": "start", "clickhouse": "external"}
    assert plan_up({}, {}, {}) == {"postgres": "start", "nats": "start", "clickhouse": "start"}
