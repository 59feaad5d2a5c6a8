"""The one NATS server for tests: nats-server with JetStream on a free loopback port.

``nats_server`` (per test, ~50 ms) starts one in a temp dir; ``nats_url`` is its URL. ``NatsProcess`` works
outside pytest too (benches) and for tests that need a relay that is down, comes back, or asks for a token:
``.restart()`` / ``.kill()`` keep the port, the stored streams and the credentials.

Authentication is always on, as in ``sco up`` (``sco.stack.natsserver.nats_launch``): ``url`` carries the
``admin`` user's password; ``users`` adds the stack's component users (``sco.stack.credentials``) and
``url_for(name)`` gives each one's URL; ``token`` starts a server that asks for that token instead.

``NatsCluster`` (fixture ``nats_cluster``) is three of them as one JetStream cluster, as ``sco up --nats-cluster 3``
runs it (``sco.stack.natsserver.start_nats_cluster``): the same users on every member, routes authenticated,
loopback only; its URLs list every member; ``leader(stream)`` finds the member leading a stream, and
``kill(i)`` / ``restart_member(i)`` take one down (SIGKILL) and bring it back with its store.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from sco.stack import credentials, natsserver, services
from sco.stack.credentials import NatsUser

__all__ = ["NatsCluster", "NatsProcess", "await_jetstream"]

await_jetstream = natsserver.await_jetstream


class NatsProcess:
    """nats-server -js on a fixed port across restarts, storing streams under ``data_dir``."""

    def __init__(self, data_dir: Path | None = None, port: int | None = None, token: str | None = None,
                 users: list[NatsUser] | None = None, cluster: credentials.NatsCluster | None = None,
                 admin_password: str | None = None) -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="sco-nats-"))
        self.port = port or services.free_port()
        self.token = token
        self.cluster = cluster
        self.users = [NatsUser("admin", admin_password or secrets.token_urlsafe(18)), *(users or [])]
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
        natsserver.write_nats_config(self.data_dir, self.port, self.users, self.token, self.cluster)
        if self.proc is not None:
            natsserver.reload_nats(self.proc.pid)
            for user in users:  # a reload is asynchronous: return once the server takes them
                natsserver.await_nats_user(self.port, user.name, user.password)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def server_name(self) -> str:
        """The name the server gives itself (``natsserver.write_nats_config``)."""
        return f"{self.cluster.name}-{self.cluster.port}" if self.cluster else f"sco-{self.port}"

    def start(self, timeout: float = 30.0) -> NatsProcess:
        argv, as_user, _ = natsserver.nats_launch(self.data_dir, self.port, self.users, self.token, self.cluster)
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


class NatsCluster:
    """``size`` nats-servers with JetStream as one cluster on loopback, every member with the same users."""

    def __init__(self, size: int = 3, data_dir: Path | None = None, users: list[NatsUser] | None = None,
                 name: str = "sco") -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="sco-natscluster-"))
        ports = services.free_ports(2 * size)
        routes = tuple(ports[size:])
        secret, admin = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
        self.members = [NatsProcess(natsserver.nats_member_dir(self.data_dir, i), ports[i], users=users,
                                    cluster=credentials.NatsCluster(name, routes[i], routes, secret),
                                    admin_password=admin) for i in range(size)]
        self.users = self.members[0].users

    @property
    def ports(self) -> list[int]:
        return [m.port for m in self.members]

    @property
    def url(self) -> str:
        """The ``admin`` user's URLs of every member, comma-separated."""
        return self.url_for("admin")

    def url_for(self, name: str) -> str:
        """User ``name``'s URLs of every member, comma-separated (``stores.nats.connect`` takes them)."""
        user = next(u for u in self.users if u.name == name)
        return credentials.nats_urls(user.name, user.password, self.ports)

    def start(self, timeout: float = 60.0) -> NatsCluster:
        """Start every member, then wait until JetStream answers (the cluster has its meta leader)."""
        for member in self.members:
            member.start(timeout)
        await_jetstream(self.url, timeout)
        return self

    def add_users(self, users: list[NatsUser]) -> None:
        """Add users to every member (each configuration rewritten and reloaded)."""
        for member in self.members:
            member.add_users(users)

    def leader(self, stream: str) -> int:
        """The index of the member leading ``stream`` (``$JS.API.STREAM.INFO``)."""
        async def ask() -> str:
            from stores import nats as sco_nats

            nc = await sco_nats.connect(self.url, name="sco-test-leader")
            try:
                info: Any = await nc.jetstream().stream_info(stream)
                return str(info.cluster.leader)
            finally:
                await nc.close()

        name = asyncio.run(ask())
        return next(i for i, m in enumerate(self.members) if m.server_name == name)

    def kill(self, index: int) -> None:
        """SIGKILL member ``index`` (a crash)."""
        self.members[index].kill()

    def restart_member(self, index: int) -> None:
        """Start member ``index`` again on its port with its store."""
        self.members[index].start()

    def close(self) -> None:
        for member in self.members:
            member.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
