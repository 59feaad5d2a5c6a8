"""What every bench shares as a command: ``python -m bench.X --help`` prints the module's docstring and exits
before anything is measured or started (``parser``, ``no_arguments``), and a bench stopped by a signal or a
timeout leaves no server behind (``stop_on_signals``)."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import signal
import time
import uuid
from collections.abc import Sequence
from pathlib import Path


def parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """An argument parser named ``python -m <module>`` whose help is the bench's docstring, verbatim."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def no_arguments(module: str, doc: str | None, argv: Sequence[str] | None = None) -> None:
    """Parse a bench's command line that takes no arguments: ``--help`` answers and exits, anything else is an
    error with argparse's usage line."""
    parser(module, doc).parse_args(argv)


_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
RUN_VAR = "SCO_BENCH_RUN"  # in the environment of every process a bench starts, servers included
_PROC = Path("/proc")
_GRACE_S = 5.0


def _carrying(needle: bytes, exclude: set[int]) -> list[int]:
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and \
                    "resource_tracker" not in (entry / "cmdline").read_text(errors="replace"):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours
            continue
    return found


def _reap(run: str) -> None:
    """SIGTERM, then SIGKILL after a grace, to what this run started and still runs (a server whose start the
    signal interrupted, before any ``finally`` knew of it). Zombies are left to their parent."""
    needle = f"{RUN_VAR}={run}".encode()
    me, pid = {os.getpid()}, os.getppid()
    while pid > 1 and pid not in me:  # this process and its ancestors carry the marker too (set by a parent run)
        me.add(pid)
        try:
            pid = int(next(line.split()[1] for line in (_PROC / str(pid) / "status").read_text().splitlines()
                           if line.startswith("PPid:")))
        except (OSError, StopIteration):
            break
    for sig, wait_s in ((signal.SIGTERM, _GRACE_S), (signal.SIGKILL, 1.0)):
        left = _carrying(needle, me)
        for each in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(each, sig)
        deadline = time.monotonic() + wait_s
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = [p for p in _carrying(needle, me) if not _zombie(p)]
        if not left:
            return


def _zombie(pid: int) -> bool:
    try:
        return any(line.split()[1] in ("Z", "X") for line in (_PROC / str(pid) / "status").read_text().splitlines()
                   if line.startswith("State:"))
    except OSError:
        return True


def _stop(signum: int, _frame: object) -> None:
    for each in _SIGNALS:  # a second signal must not cut the cleanup short; SIGKILL still can
        signal.signal(each, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def stop_on_signals() -> None:
    """SIGTERM, SIGINT and SIGHUP end the bench through its ``finally`` blocks, which stop the servers it started;
    at exit, whatever this run started and still runs is stopped too.

    The servers run in sessions of their own (a Ctrl-C meant for the bench must not kill a server mid-measure),
    so a signal sent to the bench or its process group never reaches them, and Python's default SIGTERM ends the
    bench without running any ``finally``: a bench killed by a timeout left its nats-servers and PostgreSQL
    running. Here the signal becomes ``SystemExit(128 + signal)``, unwinding every ``finally``; further signals
    are ignored until the bench has exited (SIGKILL still ends it). A server whose start the signal interrupted
    is known to no ``finally``: every process the bench starts inherits ``SCO_BENCH_RUN=<this run>``, and at exit
    the ones still running are stopped (``_reap``).
    """
    run = uuid.uuid4().hex
    os.environ[RUN_VAR] = run
    atexit.register(_reap, run)
    for each in _SIGNALS:
        signal.signal(each, _stop)
