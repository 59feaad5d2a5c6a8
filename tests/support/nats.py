"""The one NATS server for tests: nats-server with JetStream on a free loopback port.

``nats_server`` (per test, ~50 ms) starts one in a temp dir; ``nats_url`` is its URL. ``NatsProcess`` works
outside pytest too (benches) and for tests that need a relay that is down, comes back, or asks for a token:
``.restart()`` / ``.kill()`` keep the port and the stored streams.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sco.stack import services

__all__ = ["NatsProcess", "nats_server", "nats_url"]


class NatsProcess:
    """nats-server -js on a fixed port across restarts, storing streams under ``data_dir``."""

    def __init__(self, data_dir: Path | None = None, port: int | None = None, token: str | None = None) -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="sco-nats-"))
        self.port = port or services.free_port()
        self.token = token
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self, timeout: float = 30.0) -> NatsProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        auth = ["--auth", self.token] if self.token else []
        with open(self.data_dir / "nats.log", "ab") as log:
            self.proc = subprocess.Popen(
                [services.nats_binary(), "-a", "127.0.0.1", "-p", str(self.port), "-js",
                 "-sd", str(self.data_dir / "jetstream"), "-n", f"sco-{self.port}", *auth],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        services.wait_port(self.port, timeout, self.proc, "nats-server")
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL after ``timeout``."""
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def kill(self) -> None:
        """SIGKILL: no clean shutdown (what a crash looks like)."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self, hard: bool = False) -> None:
        self.kill() if hard else self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)


@pytest.fixture
def nats_server() -> Iterator[NatsProcess]:
    server = NatsProcess().start()
    yield server
    server.close()


@pytest.fixture
def nats_url(nats_server: NatsProcess) -> str:
    return nats_server.url
