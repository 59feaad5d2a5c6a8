"""The demo's child processes (each the ordinary ``sco`` command an operator runs) and the small HTTP calls it
makes to them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Procs", "post", "sco_argv", "wait_http"]


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, from /proc (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn``: the child gets SIGTERM when the demo dies, even by SIGKILL (Linux ``PR_SET_PDEATHSIG``).

    Bound here, in the parent: the child only makes the call between fork and exec.
    """
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the demo's own stop is the only one
        return None
    parent, term = os.getpid(), int(signal.SIGTERM)

    def arm() -> None:
        prctl(1, term)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the demo died before the call
            os.kill(os.getpid(), term)

    return arm


@dataclass
class Procs:
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: Path = Path(".")
    cpu_s: dict[str, float] = field(default_factory=dict)  # what stopped processes used, by name prefix

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``argv`` as the named process, its output in the run's log directory."""
        log = (self.logs / f"{name}.log").open("ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                                start_new_session=True, preexec_fn=_die_with_parent())
        self.procs[name] = proc
        return proc

    def stop(self, name: str, timeout: float = 10.0) -> None:
        """Stop the named process (its process group), if it still runs."""
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        key = name.split("-", 1)[0]
        self.cpu_s[key] = self.cpu_s.get(key, 0.0) + _cpu_seconds(proc.pid)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def check(self) -> list[str]:
        """Processes that died; a one-shot job (``history``) that finished cleanly is not a failure."""
        return [f"{n} exited with {p.returncode} (log: {self.logs / (n + '.log')})"
                for n, p in self.procs.items() if p.poll() is not None and not (n == "history" and p.returncode == 0)]

    def wait(self, name: str, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the named process; its exit status, or None."""
        proc = self.procs.get(name)
        if proc is None:
            return None
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop_all(self) -> None:
        """Stop every process still running."""
        for name in list(self.procs):
            self.stop(name)


def sco_argv(*args: str) -> list[str]:
    """The argv that runs ``sco`` with ``args`` in this Python."""
    return [sys.executable, "-m", "sco", *args]


def wait_http(url: str, timeout: float) -> None:
    """Wait up to ``timeout`` seconds for ``url`` to answer; raises when it does not."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")


def post(url: str, body: Any = None, *, token: str | None = None) -> Any:
    """POST ``body`` as JSON to ``url`` (``token``: the bearer credential); the decoded JSON answer."""
    data = json.dumps(body if body is not None else {}).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read() or b"null")
