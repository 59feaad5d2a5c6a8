"""``sco up --nats-cluster 3``: three nats-servers as one JetStream cluster, with every trust-boundary rule of the
single server kept on each member (docs/stack.md): each authenticates clients with the stack's users, the routes
authenticate each other, nothing listens beyond loopback; the streams get 3 replicas and every URL names all
three members."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sco.stack import bootstrap, listeners, manager, natsserver, services
from sco.stack.credentials import NATS_ROUTE_USER
from stores import nats as sco_nats
from stores.config import load_urls
from testkit.paths import REPO
from tests.support.stack import NATS_ONLY, nats_only_stack


@pytest.fixture(scope="module")
def cluster_home() -> Iterator[Path]:
    with nats_only_stack("sco-natscluster-", nats_cluster=3) as home:
        yield home


def _record(home: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((home / "stack.json").read_text())["services"]["nats"]
    return record


def _creds(home: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((home / "credentials.json").read_text())
    return doc


def _listening(pid: int) -> set[tuple[str, int]]:
    """The (address, port) of every TCP socket ``pid`` listens on (from /proc: its socket inodes)."""
    inodes = listeners.socket_inodes(pid)
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                address, port = fields[1].split(":")
                if width == 8:
                    host = socket.inet_ntop(socket.AF_INET, bytes.fromhex(address)[::-1])
                else:
                    host = socket.inet_ntop(socket.AF_INET6, b"".join(
                        bytes.fromhex(address[i:i + 8])[::-1] for i in range(0, 32, 8)))
                found.add((host, int(port, 16)))
    return found


def _route_accepts(port: int, user: str, password: str) -> bool:
    """One route CONNECT (verbose) on the route port: ``+OK`` is accepted, ``-ERR`` refused."""
    doc = {"verbose": True, "pedantic": False, "user": user, "pass": password, "name": "stranger"}
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, sock.makefile("rb") as reply:
        assert reply.readline().startswith(b"INFO")
        sock.sendall(b"CONNECT " + json.dumps(doc).encode() + b"\r\nPING\r\n")
        return reply.readline().startswith(b"+OK")


@pytest.mark.services
def test_sco_up_nats_cluster_3_records_three_members_on_loopback_and_every_url_names_all_of_them(
        cluster_home: Path) -> None:
    record = _record(cluster_home)
    members = record["members"]
    assert len(members) == 3 and len({m["port"] for m in members}) == 3
    assert len({m["route_port"] for m in members} | {m["port"] for m in members}) == 6
    assert len({m["data_dir"] for m in members}) == 3
    for member in members:
        assert services.pid_alive(member["pid"])
        assert _listening(member["pid"]) == {("127.0.0.1", member["port"]), ("127.0.0.1", member["route_port"])}
    ports = sorted(m["port"] for m in members)
    for component in ("ingest", "relay", "controller", "region", "watcher"):
        url = load_urls(cluster_home, component).nats
        assert url is not None
        assert sorted(int(u.rsplit(":", 1)[1]) for u in sco_nats.server_list(url)) == ports
    assert manager.agent_relay_urls(cluster_home) == [f"nats://127.0.0.1:{m['port']}" for m in members]
    assert [s.action for s in manager.status(cluster_home, env=NATS_ONLY) if s.name == "nats"] == ["running"]


@pytest.mark.services
def test_every_member_authenticates_clients_as_the_single_server_does_and_the_routes_each_other(
        cluster_home: Path) -> None:
    creds = _creds(cluster_home)
    members = _record(cluster_home)["members"]
    minted = manager.mint_agent("r1", "i-cluster", cluster_home, password="pw-launch")
    for member in members:
        port = member["port"]
        assert natsserver.nats_accepts(port, "ingest", creds["nats"]["ingest"])
        assert not natsserver.nats_accepts(port, "ingest", "wrong")
        assert not natsserver.nats_accepts(port, "", "")
        assert natsserver.nats_accepts(port, "agent.r1.i-cluster", "pw-launch")  # minted on every member
        assert not natsserver.nats_accepts(port, NATS_ROUTE_USER, creds["nats"][NATS_ROUTE_USER])  # no client user
        assert not _route_accepts(member["route_port"], NATS_ROUTE_USER, "wrong")
        assert not _route_accepts(member["route_port"], "admin", creds["nats"]["admin"])
    assert len(sco_nats.server_list(minted)) == 3
    conf = (Path(members[0]["data_dir"]) / "nats.conf").read_text()
    assert creds["nats"]["ingest"] not in conf and creds["nats"]["admin"] not in conf  # bcrypt hashes only


@pytest.mark.services
def test_the_streams_get_three_replicas_and_a_component_default_never_shrinks_them(cluster_home: Path) -> None:
    admin = load_urls(cluster_home).nats
    assert admin is not None
    assert bootstrap.ensure_streams(admin) == ("SCO_EVENTS", sco_nats.DEADLETTER_STREAM)

    async def replicas() -> tuple[int, int, int]:
        nc = await sco_nats.connect(admin)
        try:
            js = nc.jetstream()
            await sco_nats.ensure_events_stream(js)  # what every component does at start: no change
            events = await js.stream_info("SCO_EVENTS")
            dead = await js.stream_info(sco_nats.DEADLETTER_STREAM)
            return events.config.num_replicas, dead.config.num_replicas, len(events.cluster.replicas or []) + 1
        finally:
            await nc.close()

    assert asyncio.run(replicas()) == (3, 3, 3)


@pytest.mark.services
def test_a_killed_member_is_started_again_on_its_port_by_up_and_a_different_size_is_refused(
        cluster_home: Path) -> None:
    before = _record(cluster_home)["members"]
    services.stop_pid(before[1]["pid"])
    assert [s.action for s in manager.status(cluster_home, env=NATS_ONLY) if s.name == "nats"] == ["down"]
    healed = {s.name: s.action for s in manager.up(cluster_home, env=NATS_ONLY, nats_cluster=3)}
    assert healed["nats"] == "started"
    after = _record(cluster_home)["members"]
    assert [m["port"] for m in after] == [m["port"] for m in before]
    assert [m["pid"] for m in after][0::2] == [m["pid"] for m in before][0::2]  # the live ones were kept
    assert after[1]["pid"] != before[1]["pid"] and services.pid_alive(after[1]["pid"])
    with pytest.raises(RuntimeError, match="runs as 3 server"):
        manager.up(cluster_home, env=NATS_ONLY, nats_cluster=1)
    with pytest.raises(ValueError, match="use 1 or 3"):
        manager.up(cluster_home, env=NATS_ONLY, nats_cluster=2)


def test_sco_up_refuses_a_nats_cluster_of_two_naming_the_option_and_the_sizes_it_takes(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SCO_")}, "SCO_HOME": str(tmp_path / ".sco")}
    done = subprocess.run([sys.executable, "-m", "sco.cli", "up", "--nats-cluster", "2"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--nats-cluster 2: NCL001" in done.stderr and "use 1 or 3" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / ".sco" / "stack.json").exists()
