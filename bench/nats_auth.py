"""nats-server for the agent benches, authenticated as ``sco up`` runs it (``sco.stack``).

The server's configuration comes from ``sco.stack.natsserver.nats_launch``: an ``admin`` user (every subject,
used to create the event stream), the region's relay user ``region`` with the stack's permissions
(``sco.stack.credentials.NATS_PERMISSIONS``: the only user that may publish ``sco.notice.>``), and one user per
instance minted as ``sco.stack.manager.mint_agent`` mints them (``sco.stack.credentials.agent_user``: subscribe
to its own notice/advisory subjects and reply inbox, publish its region's events). ``extra`` adds bench-only
users (``notice_fanout``'s subscribers).

``auth=False`` starts the server as the benches did before authentication (``nats-server -js``, no
``authorization`` block): the same-run "before" baseline of ``bench.agent_notice_latency`` and nothing else.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from sco.stack import credentials, natsserver, services
from sco.stack.credentials import NatsUser

__all__ = ["BenchNats", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BenchNats:
    """A nats-server with JetStream on a free loopback port; authenticated unless ``auth=False``."""

    def __init__(self, workdir: Path, region: str = "r1", instances: Iterable[str] = (), auth: bool = True,
                 extra: Iterable[NatsUser] = ()) -> None:
        self.auth = auth
        self.region = region
        self.port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        self.users: dict[str, NatsUser] = {}
        self._agents: dict[str, NatsUser] = {}
        if auth:
            perms = credentials.NATS_PERMISSIONS["region"]
            assert perms is not None
            users = [NatsUser("admin", _secret()), NatsUser("region", _secret(), tuple(perms[0]), tuple(perms[1])),
                     *extra]
            self.users = {u.name: u for u in users}
            self._agents = {i: credentials.agent_user(region, i, _secret()) for i in instances}
            argv, as_user, _ = natsserver.nats_launch(workdir, self.port, [*users, *self._agents.values()])
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,  # type: ignore[call-overload]
                                         stderr=subprocess.DEVNULL, start_new_session=True, **as_user)
        else:
            binary = Path(sys.executable).parent / "nats-server"
            exe = str(binary) if binary.exists() else natsserver.nats_binary()
            self.proc = subprocess.Popen([exe, "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(workdir)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 15
        while not services.port_open(self.port):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise RuntimeError(f"nats-server did not start on 127.0.0.1:{self.port}")
            time.sleep(0.05)

    @property
    def bare_url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def url_for(self, name: str) -> str:
        """User ``name``'s URL (``admin``, ``region`` or an ``extra`` user); the bare URL without auth."""
        if not self.auth:
            return self.bare_url
        user = self.users[name]
        return credentials.nats_url(user.name, user.password, self.port)

    @property
    def url(self) -> str:
        """The administrator's URL (every subject): creating streams, reading them back."""
        return self.url_for("admin")

    @property
    def relay_url(self) -> str:
        """The region's relay: the one publisher of notices."""
        return self.url_for("region")

    def agent_url(self, instance: str) -> str:
        """The URL with ``instance``'s own minted credential (the bare URL without auth)."""
        if not self.auth:
            return self.bare_url
        user = self._agents[instance]
        return credentials.nats_url(user.name, user.password, self.port)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def _secret() -> str:
    return secrets.token_urlsafe(18)
