"""A pytest plugin: a test session leaves no process behind.

At session start a unique marker goes into ``os.environ`` (``SCO_TEST_SESSION=<uuid>``); every process a test
starts inherits it, down to the servers that the embedded stack detaches into their own sessions. At session end
(after the session-scoped fixtures are torn down) ``/proc/*/environ`` is scanned for processes that still carry
the marker, other than pytest itself and its ancestors. Any that remain are listed (pid, command line) and the
session fails. Set ``SCO_TEST_LEFTOVERS=allow`` to only list them (for debugging a test's processes by hand).

Registered from ``tests/conftest.py`` with ``pytest_plugins = ["tests.support.leftovers"]``.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["ALLOW_VAR", "MARKER_VAR", "Leftover", "ancestors", "carrying", "scan"]

MARKER_VAR = "SCO_TEST_SESSION"
ALLOW_VAR = "SCO_TEST_LEFTOVERS"  # "allow": list the leftovers, do not fail the session
# A process signalled just before the end may still be on its way out, slowly on a loaded machine. The scan is left
# as soon as none is left: only a real leftover makes the session that much longer.
GRACE_S = 30.0

_PROC = Path("/proc")
_FOUND: pytest.StashKey[list[Leftover]] = pytest.StashKey()


@dataclass(frozen=True)
class Leftover:
    pid: int
    cmdline: str


def _pids(proc: Path) -> Iterator[int]:
    for entry in proc.iterdir():
        if entry.name.isdigit():
            yield int(entry.name)


def _status(pid: int, proc: Path) -> dict[str, str]:
    try:
        text = (proc / str(pid) / "status").read_text()
    except OSError:
        return {}
    return {key: value.strip() for key, _, value in (line.partition(":") for line in text.splitlines())}


def ancestors(pid: int, proc: Path = _PROC) -> set[int]:
    """``pid`` and every process above it up to init."""
    seen: set[int] = set()
    while pid > 0 and pid not in seen:
        seen.add(pid)
        pid = int(_status(pid, proc).get("PPid", "0") or 0)
    return seen


def _cmdline(pid: int, proc: Path) -> str:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part) or "?"


# A process caught mid-exec: the kernel has switched it to its new address space but not yet written the
# argument and environment pointers there, so /proc/PID/environ and cmdline read empty for a moment (about 1 in 30
# reads right after Popen returns, measured). A user process (one with an address space: VmSize in its status)
# whose environment reads empty is read again until the exec has settled; kernel threads have none and are skipped.
EXEC_SETTLE_S = 0.5


def _environ(pid: int, proc: Path) -> bytes:
    deadline = time.monotonic() + EXEC_SETTLE_S
    while True:
        environ = (proc / str(pid) / "environ").read_bytes()
        if environ or "VmSize" not in _status(pid, proc) or time.monotonic() >= deadline:
            return environ
        time.sleep(0.002)


def carrying(marker: str, *, exclude: AbstractSet[int] = frozenset(), proc: Path = _PROC) -> list[Leftover]:
    """Live processes whose environment holds ``MARKER_VAR=marker`` (zombies and ``exclude`` left out)."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found: list[Leftover] = []
    for pid in _pids(proc):
        if pid in exclude:
            continue
        try:
            environ = _environ(pid, proc)
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if needle not in environ.split(b"\0"):
            continue
        if _status(pid, proc).get("State", "Z").startswith(("Z", "X")):
            continue
        found.append(Leftover(pid, _cmdline(pid, proc)))
    return sorted(found, key=lambda left: left.pid)


# Helpers of this very process that end with it: multiprocessing's resource tracker reads a pipe from its parent
# and exits when the parent does (a library imported by a test may start it).
_ENDS_WITH_PARENT = ("from multiprocessing.resource_tracker import main",)


def _own_helper(left: Leftover, parent: int, proc: Path) -> bool:
    return _status(left.pid, proc).get("PPid") == str(parent) and any(h in left.cmdline for h in _ENDS_WITH_PARENT)


def scan(marker: str, grace_s: float | None = None, proc: Path = _PROC) -> list[Leftover]:
    """The processes carrying ``marker`` still alive after ``grace_s`` (default ``GRACE_S``).

    This process, its ancestors and its own helpers that end with it (the resource tracker) are left aside.
    """
    me = os.getpid()
    exclude = ancestors(me, proc)

    def alive() -> list[Leftover]:
        return [left for left in carrying(marker, exclude=exclude, proc=proc) if not _own_helper(left, me, proc)]

    deadline = time.monotonic() + (GRACE_S if grace_s is None else grace_s)
    found = alive()
    while found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = alive()
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller set the marker and scans at its end
    os.environ[MARKER_VAR] = uuid.uuid4().hex


@pytest.hookimpl(trylast=True)  # after the runner has torn down the session-scoped fixtures
def pytest_sessionfinish(session: pytest.Session) -> None:
    marker = os.environ.get(MARKER_VAR)
    if not marker or hasattr(session.config, "workerinput"):
        return
    found = scan(marker)
    session.config.stash[_FOUND] = found
    if found and os.environ.get(ALLOW_VAR) != "allow":
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    found = config.stash.get(_FOUND, [])
    if not found:
        return
    allowed = os.environ.get(ALLOW_VAR) == "allow"
    terminalreporter.section("processes left behind", sep="=", red=not allowed, yellow=allowed)
    for left in found:
        terminalreporter.line(f"pid {left.pid}: {left.cmdline[:300]}")
    verdict = f"listed only: {ALLOW_VAR}=allow" if allowed else f"the session fails; {ALLOW_VAR}=allow only lists them"
    terminalreporter.line(f"{len(found)} process(es) started by this session still run ({verdict})")
