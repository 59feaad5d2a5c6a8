"""Shared test configuration.

Markers (``make test-fast`` runs the tests that carry none of them):

- ``services``: the test starts an embedded PostgreSQL, NATS or ClickHouse. Added here to every test that uses
  one of the server fixtures (``SERVICE_FIXTURES``, directly or through another fixture); a test that starts a
  server itself carries the marker by hand.
- ``testbed``: needs a system test bed brought up by ``deploy/testbed/<name>/up`` (Slurm, OpenStack, Ceph RGW,
  monitoring, cloud-init, Patroni with etcd).
  Skipped when ``SCO_TESTBED`` is unset (a developer's quick run) and required when it is set: ``.ci/run``
  exports ``SCO_TESTBED=required``, so in CI a missing test bed fails rather than skips.
- ``slow``: takes more than a few seconds even without a service.

The one NATS, PostgreSQL and ClickHouse fixture each live in ``tests/support/`` and are registered below.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.paths import REPO

pytest_plugins = [
    "tests.support.leftovers", "tests.support.groups",
    "tests.support.nats", "tests.support.postgres", "tests.support.clickhouse",
]

# Fixtures that start a server; ``stack`` is tests/orchestration's PostgreSQL + ClickHouse pair, ``stack_home``
# an ``sco up`` home with NATS alone.
SERVICE_FIXTURES = frozenset({"nats_server", "nats_cluster", "postgres_server", "clickhouse_server", "stack",
                              "stack_home"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
    if os.environ.get("SCO_TESTBED"):
        return
    skip = pytest.mark.skip(reason="system test bed: set SCO_TESTBED=1 after deploy/testbed/<name>/up")
    for item in items:
        if "testbed" in item.keywords:
            item.add_marker(skip)


_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


@pytest.fixture(autouse=True)
def _signals_as_they_were() -> Iterator[None]:
    """Each test leaves the worker's signal handlers and mask as it found them. Code under test installs its own
    (a command's SIGTERM handler, a bench's SIG_IGN while it cleans up); left behind, the next test's children
    inherit an ignored SIGTERM, or the handler swallows a signal sent between fork and exec."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    # a test's children start with SIGTERM and SIGHUP acted on and nothing blocked, whatever the worker inherited
    # or a session-long fixture left (an ignored SIGTERM is inherited across exec: a stray `sleep` or a spawned
    # `sco ingest` then outlives its SIGTERM); seen once in a clean-clone run with SigIgn 0x80004006
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if handlers[sig] is signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    for sig, handler in handlers.items():
        if signal.getsignal(sig) is not handler and handler is not None:
            signal.signal(sig, handler)


_SCO_ENV_AT_START: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    """The replays' disk cache in a directory of this run (the xdist workers inherit it), never the user's: what
    one run's tests computed is reused within the run and never leaks into another or into ``~/.cache``."""
    if "SCO_REPLAY_CACHE" not in os.environ:
        import tempfile

        os.environ["SCO_REPLAY_CACHE"] = _REPLAY_CACHE_MADE[0] = tempfile.mkdtemp(prefix="sco-test-replay-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's replay cache goes with the run (only the process that made it removes it)."""
    if _REPLAY_CACHE_MADE[0]:
        import shutil

        shutil.rmtree(_REPLAY_CACHE_MADE[0], ignore_errors=True)
        os.environ.pop("SCO_REPLAY_CACHE", None)


_REPLAY_CACHE_MADE = [""]


def _sco_environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("SCO_")}


@pytest.hookimpl(trylast=True)  # after the leftovers plugin has set the session's marker variable
def pytest_sessionstart(session: pytest.Session) -> None:
    _SCO_ENV_AT_START.update(_sco_environ())


def put_back_sco_environ(start: dict[str, str]) -> list[str]:
    """Puts the ``SCO_*`` variables back to ``start``; returns the names that had changed (none: nothing done)."""
    now = _sco_environ()
    changed = sorted(set(now) | set(start), key=str)
    changed = [k for k in changed if now.get(k) != start.get(k)]
    for k in changed:
        if k in start:
            os.environ[k] = start[k]
        else:
            os.environ.pop(k)
    return changed


@pytest.fixture(autouse=True)
def _sco_environment_as_it_was() -> Iterator[None]:
    """A test (or a fixture it set up, of any scope) that leaves an ``SCO_*`` variable behind errors here, and
    the worker's environment is put back: ``load_urls`` puts the environment before a stack file, so a store URL
    left by one test sends a later test in the same worker to the wrong server (seen once in CI: a stable-ports
    test counted the analytics session's 596,742 events)."""
    yield
    changed = put_back_sco_environ(_SCO_ENV_AT_START)
    if changed:
        pytest.fail(f"this test left the environment changed: {', '.join(changed)} (use monkeypatch or "
                    "mock.patch.dict so it is put back)", pytrace=False)


@pytest.fixture(autouse=True)
def _services_only_when_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test without the ``services`` marker that starts a server in this process fails, naming the marker (so
    ``make test-fast`` never waits on one)."""
    if request.node.get_closest_marker("services") is not None:
        return
    from sco.stack import services

    def refuse(*_: object, **__: object) -> None:
        raise RuntimeError(f"{request.node.nodeid} starts a server: mark it @pytest.mark.services "
                           "(or use the nats_server/postgres_server/clickhouse_server fixtures)")

    from sco.stack import natsserver

    for name in ("start_postgres", "start_clickhouse"):
        monkeypatch.setattr(services, name, refuse)
    for name in ("nats_binary", "start_nats", "start_nats_cluster"):
        monkeypatch.setattr(natsserver, name, refuse)


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def chdir_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.fixture
def stack_home(request: pytest.FixtureRequest) -> Iterator[Path]:
    """``sco up --fast`` into a fresh SCO_HOME with only NATS started; taken down after the test."""
    from tests.support.stack import nats_only_stack

    with nats_only_stack(f"sco-{request.module.__name__.rsplit('.', 1)[-1]}-") as home:
        yield home


@pytest.fixture
def kube() -> Iterator[Any]:
    """An empty Kubernetes API double (``sco.demo.kubeapi.KubeApiDouble``); a test area seeds what it needs."""
    from sco.demo.kubeapi import KubeApiDouble

    with KubeApiDouble() as double:
        yield double
