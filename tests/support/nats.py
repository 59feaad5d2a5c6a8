"""The one NATS server for tests: nats-server with JetStream on a free loopback port.

``nats_server`` (per test, ~50 ms) starts one in a temp dir; ``nats_url`` is its URL. ``NatsProcess`` works
outside pytest too (benches) and for tests that need a relay that is down, comes back, or asks for a token:
``.restart()`` / ``.kill()`` keep the port, the stored streams and the credentials.

Authentication is always on, as in ``sco up`` (``sco.stack.services.nats_launch``): ``url`` carries the
``admin`` user's password; ``users`` adds the stack's component users (``sco.stack.credentials``) and
``url_for(name)`` gives each one's URL; ``token`` starts a server that asks for that token instead.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sco.stack import credentials, services
from sco.stack.credentials import NatsUser

__all__ = ["NatsProcess", "nats_server", "nats_url"]


class NatsProcess:
    """nats-server -js on a fixed port across restarts, storing streams under ``data_dir``."""

    def __init__(self, data_dir: Path | None = None, port: int | None = None, token: str | None = None,
                 users: list[NatsUser] | None = None) -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="sco-nats-"))
        self.port = port or services.free_port()
        self.token = token
        self.users = [NatsUser("admin", secrets.token_urlsafe(18)), *(users or [])]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The ``admin`` user's URL (every subject), or the bare URL of a token server."""
        return self.bare_url if self.token else self.url_for("admin")

    @property
    def bare_url(self) -> str:
        """The URL without credentials (what a stranger on the host would try)."""
        return f"nats://127.0.0.1:{self.port}"

    def url_for(self, name: str) -> str:
        """The URL of user ``name``."""
        user = next(u for u in self.users if u.name == name)
        return credentials.nats_url(user.name, user.password, self.port)

    def add_users(self, users: list[NatsUser]) -> None:
        """Add users to the running server (configuration rewritten, then reloaded)."""
        self.users += users
        services.write_nats_config(self.data_dir, self.port, self.users, self.token)
        if self.proc is not None:
            services.reload_nats(self.proc.pid)
            for user in users:  # a reload is asynchronous: return once the server takes them
                services.await_nats_user(self.port, user.name, user.password)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self, timeout: float = 30.0) -> NatsProcess:
        argv, as_user, _ = services.nats_launch(self.data_dir, self.port, self.users, self.token)
        with open(self.data_dir / "nats.log", "ab") as log:
            self.proc = subprocess.Popen(  # type: ignore[call-overload]
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                **as_user)
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
