"""The notice callback (ADR-14, ADR-18): the node agent tells the workload its node is being reclaimed.

Either by the contract's drain signal (delivered through the scheduler: ``scancel --signal``, pod
termination) or by a JSON line on a local unix socket. Either way the workload sees one :class:`Notice`
with the seconds it has left, and checks :attr:`NoticeListener.notice` between steps.

Wire format on the socket (one line, UTF-8 JSON): ``{"kind": "notice", "budget_s": 110, "reason": "reclaim"}``.
:func:`send_notice` is the sender (the agent side; standard library only).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

__all__ = ["Notice", "NoticeListener", "send_notice"]


@dataclass(frozen=True)
class Notice:
    """A reclaim notice as the workload received it, with its drain budget."""

    source: str  # "signal:SIGUSR1" or "socket"
    received_monotonic: float
    budget_s: float
    reason: str = "reclaim"

    def remaining_s(self, now_monotonic: float) -> float:
        """Seconds of the drain budget left at ``now_monotonic`` (negative once it has passed)."""
        return self.budget_s - (now_monotonic - self.received_monotonic)


class NoticeListener:
    """Collects the first notice; callbacks run on the thread that delivered it (keep them short)."""

    def __init__(self, default_budget_s: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.default_budget_s = default_budget_s
        self.monotonic = monotonic
        self._notice: Notice | None = None
        self._event = threading.Event()
        self._callbacks: list[Callable[[Notice], None]] = []
        self._sock: socket.socket | None = None
        self._sock_path: Path | None = None
        self._lock = threading.Lock()

    @property
    def notice(self) -> Notice | None:
        """The first notice received, or None."""
        return self._notice

    def on_notice(self, callback: Callable[[Notice], None]) -> None:
        """Call ``callback`` with the first notice, on the thread that delivers it."""
        self._callbacks.append(callback)

    def deliver(self, source: str, budget_s: float | None = None, reason: str = "reclaim") -> Notice:
        """Record a notice (only the first counts) and run the callbacks; the notice in force."""
        with self._lock:
            if self._notice is None:
                self._notice = Notice(source, self.monotonic(), float(budget_s or self.default_budget_s), reason)
                first = True
            else:
                first = False
        if first:
            self._event.set()
            for cb in self._callbacks:
                cb(self._notice)
        assert self._notice is not None
        return self._notice

    def wait(self, timeout: float | None = None) -> Notice | None:
        """Wait up to ``timeout`` seconds for a notice; the notice, or None."""
        self._event.wait(timeout)
        return self._notice

    # --- signal ----------------------------------------------------------------------------------------
    def install_signal(self, sig: int | str) -> None:
        """Treat ``sig`` (e.g. ``SIGUSR1`` or ``"SIGTERM"``, the contract's drain signal) as the notice."""
        signum = sig if isinstance(sig, int) else getattr(signal, sig if sig.startswith("SIG") else f"SIG{sig}")
        name = signal.Signals(signum).name

        def handler(_signum: int, _frame: FrameType | None) -> None:
            self.deliver(f"signal:{name}")

        signal.signal(signum, handler)

    # --- unix socket -----------------------------------------------------------------------------------
    def serve_socket(self, path: Path) -> None:
        """Listen on ``path`` (mode 0600) for notice lines from the agent, on a daemon thread."""
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(4)
        self._sock, self._sock_path = sock, path
        threading.Thread(target=self._accept, args=(sock,), name="sco-notice", daemon=True).start()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2.0)
                data = b""
                with contextlib.suppress(OSError):
                    while not data.endswith(b"\n"):
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                try:
                    msg = json.loads(data.decode() or "{}")
                except ValueError:
                    continue
                if isinstance(msg, dict) and msg.get("kind") == "notice":
                    budget = msg.get("budget_s")
                    self.deliver("socket", float(budget) if budget is not None else None,
                                 str(msg.get("reason", "reclaim")))
                    with contextlib.suppress(OSError):
                        conn.sendall(b'{"ok": true}\n')

    def close(self) -> None:
        """Stop listening on the socket and remove its file."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._sock_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self._sock_path.unlink()


def send_notice(path: Path, budget_s: float, reason: str = "reclaim", timeout_s: float = 2.0) -> bool:
    """The agent side: deliver a notice to a workload listening on ``path``. True when acknowledged."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(str(path))
        sock.sendall(json.dumps({"kind": "notice", "budget_s": budget_s, "reason": reason}).encode() + b"\n")
        try:
            return b"ok" in sock.recv(64)
        except OSError:
            return False
