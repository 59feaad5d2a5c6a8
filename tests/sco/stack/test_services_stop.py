"""The embedded stack stops what it starts: a server that does not come up is not left running, and stopping a
server stops every process in its group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from sco.stack import natsserver, services
from tests.support.leftovers import MARKER_VAR, carrying


@pytest.fixture
def marker(monkeypatch: pytest.MonkeyPatch) -> str:
    """A marker of this test's own, in the environment its servers inherit."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(MARKER_VAR, value)
    return value


def _gone(marker: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while carrying(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not carrying(marker)


@pytest.mark.services  # it starts a real nats-server (that is told to give up at once)
def test_a_nats_server_that_does_not_listen_in_time_is_stopped_before_the_error(tmp_path: Path, marker: str) -> None:
    with pytest.raises(TimeoutError, match="did not listen"):
        natsserver.start_nats(tmp_path / "nats", timeout=0)
    assert _gone(marker), carrying(marker)


def test_stopping_a_server_stops_the_processes_it_started(tmp_path: Path, marker: str) -> None:
    proc = services._spawn(["sh", "-c", "sleep 60 & wait"], tmp_path / "sh.log")
    try:
        want, deadline = {"sh -c sleep 60 & wait", "sleep 60"}, time.monotonic() + 10
        # two processes are not yet both: the shell's child reads "sh -c …" until it has exec'd sleep
        while {left.cmdline for left in carrying(marker)} != want and time.monotonic() < deadline:
            time.sleep(0.05)
        assert {left.cmdline for left in carrying(marker)} == want
        services.stop_pid(proc.pid, timeout=5)
        assert _gone(marker), carrying(marker)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        services.reap(proc.pid, 5)


def test_a_stray_pid_is_stopped_alone_when_it_leads_no_group(marker: str) -> None:
    proc = subprocess.Popen(["sleep", "60"])  # in pytest's process group: only it may be signalled
    try:
        # the child's signal state, for the failure's message: once in ~10 loaded runs the SIGTERM was not acted on
        # (killed by the SIGKILL after 5 s; given 60 s, the sleep ran out and exited 0): blocked or ignored as
        # inherited from this worker, not load
        masks = " ".join(line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                         if line.startswith(("SigBlk", "SigIgn")))
        services.stop_pid(proc.pid, timeout=5)
        assert proc.wait(5) == -signal.SIGTERM, masks
    finally:
        proc.kill()
        proc.wait(5)
