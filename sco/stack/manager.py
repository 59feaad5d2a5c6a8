"""``sco up`` / ``sco down`` / ``sco status``: the embedded stack under ``$SCO_HOME`` (default ``.sco``).

``up`` starts (or reuses) PostgreSQL, NATS with JetStream and the ClickHouse front end on free loopback
ports and records them in ``$SCO_HOME/stack.json``; a server started again (after a crash) gets its recorded
port back when it is free, so running clients reconnect where they were; a store given by URL (``SCO_POSTGRES_URL``,
``SCO_NATS_URL``, ``SCO_CLICKHOUSE_URL``) is recorded as external and never started or stopped. ``down``
stops only what ``up`` started. Data stays under ``$SCO_HOME`` between runs.

Every server it starts authenticates (``sco.stack.credentials``): the secrets are generated once into
``$SCO_HOME/credentials.json`` (0600); ``stack.json`` (0600) records each store's administrative URL (the
PostgreSQL owner role, the NATS ``admin`` user, the ClickHouse ``sco`` user) under ``services`` and one URL
per component and store under ``components`` (``stores.config.load_urls(component=...)``). ``mint_agent``
adds one instance's agent to NATS.

``up(nats_cluster=3)`` (``sco up --nats-cluster 3``) starts NATS as three nats-servers in one JetStream cluster
(``sco.stack.natsserver.start_nats_cluster``: members under ``nats/n0`` .. ``nats/n2``, routes on loopback
authenticated with the ``route`` secret of ``credentials.json``); the NATS record lists the members and every
NATS URL names all of them, comma-separated. One server stays the default.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from stores.config import ENV_VARS, Store, sco_home, stack_file

from ..errors import PortTaken
from . import credentials as creds_mod
from . import natsserver, services
from .credentials import Credentials

__all__ = ["STORES", "Decision", "ServiceStatus", "StackAgentCredentials", "agent_relay_url", "agent_relay_urls",
           "down", "forget_agent", "mint_agent", "nats_size", "plan_up", "status", "up"]

STORES: tuple[Store, ...] = ("postgres", "nats", "clickhouse")
CLUSTER_NAME = "sco"  # the NATS cluster's name; its members are sco-<route port>


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    url: str | None
    managed: bool  # started by `sco up` (False: given by URL)
    pid: int | None
    healthy: bool
    action: str  # started | reused | external | stopped | down | missing


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "stack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _read(home: Path) -> dict[str, Any]:
    path = stack_file(home)
    if not path.is_file():
        return {"version": 1, "services": {}}
    data: dict[str, Any] = json.loads(path.read_text())
    data.setdefault("services", {})
    return data


def _write(home: Path, data: dict[str, Any], creds: Credentials | None = None) -> None:
    """stack.json, mode 0600; with ``creds``, the component URLs of the managed stores are rewritten."""
    if creds is not None:
        ports = {store: record.get("port") for store, record in data["services"].items() if record.get("managed")}
        nats = data["services"].get("nats") or {}
        members = [int(m["port"]) for m in nats.get("members", [])] if nats.get("managed") else []
        data["components"] = creds_mod.component_urls(creds, ports, members)
    creds_mod.write_private(stack_file(home), json.dumps(data, indent=2, sort_keys=True) + "\n")


def _healthy(record: dict[str, Any]) -> bool:
    if record.get("managed"):
        return all(bool(m.get("pid") and m.get("port") and services.pid_alive(int(m["pid"]))
                        and services.port_open(int(m["port"]))) for m in _members(record))
    return True


def _members(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The servers of a record: a NATS cluster's members, else the one server."""
    return list(record.get("members") or [record])


def nats_size(record: dict[str, Any] | None) -> int:
    """How many nats-servers a NATS record stands for (0: none recorded)."""
    return len(_members(record)) if record else 0


def _record(running: services.Running) -> dict[str, Any]:
    return {"url": running.url, "managed": True, "pid": running.pid, "port": running.port,
            "data_dir": running.data_dir}


def _start_nats_cluster(home: Path, port: int, size: int, creds: Credentials) -> dict[str, Any]:
    """``size`` nats-servers as one JetStream cluster (``port`` and free ports), ready for streams."""
    extra = services.free_ports(2 * size)
    ports, routes = [port, *extra[:size - 1]], extra[size - 1:2 * size - 1]
    members = natsserver.start_nats_cluster(home / "nats", ports, routes, creds.nats[creds_mod.NATS_ROUTE_USER],
                                          users=creds_mod.nats_users(creds), name=CLUSTER_NAME)
    url = creds_mod.nats_urls("admin", creds.nats["admin"], ports)
    try:
        natsserver.await_jetstream(url, timeout=60)
    except BaseException:
        for member in members:
            services.stop_pid(member.pid)
        raise
    return {"url": url, "managed": True, "pid": members[0].pid, "port": port, "data_dir": str(home / "nats"),
            "cluster": CLUSTER_NAME, "members": [{**_record(m), "route_port": r} for m, r in zip(
                members, routes, strict=True)]}


def _heal_nats_cluster(record: dict[str, Any], creds: Credentials) -> dict[str, Any]:
    """Start again, on its ports and with its store, each member of a recorded cluster that is down (a member's
    name and its streams' peer sets hang on its route port: a new port would be a stranger to the others)."""
    routes = tuple(int(m["route_port"]) for m in record["members"])
    members = []
    for member in record["members"]:
        alive = services.pid_alive(int(member["pid"])) and services.port_open(int(member["port"]))
        if not alive:
            if services.pid_alive(int(member["pid"])):
                services.stop_pid(int(member["pid"]))
            cluster = creds_mod.NatsCluster(str(record.get("cluster", CLUSTER_NAME)), int(member["route_port"]),
                                            routes, creds.nats[creds_mod.NATS_ROUTE_USER])
            running = natsserver.start_nats(Path(member["data_dir"]), int(member["port"]), timeout=30,
                                          users=creds_mod.nats_users(creds), cluster=cluster)
            member = {**member, "pid": running.pid}
        members.append(member)
    url = creds_mod.nats_urls("admin", creds.nats["admin"], [int(m["port"]) for m in members])
    natsserver.await_jetstream(url, timeout=60)
    return {**record, "url": url, "pid": members[0]["pid"], "members": members}


def _start(store: Store, home: Path, fast: bool, port: int, creds: Credentials, nats_cluster: int,
           record: dict[str, Any]) -> dict[str, Any]:
    if store == "nats" and nats_cluster > 1:
        if record.get("managed") and nats_size(record) == nats_cluster:
            return _heal_nats_cluster(record, creds)
        return _start_nats_cluster(home, port, nats_cluster, creds)
    try:
        return _record(_start_one(store, home, fast, port, creds))
    except PortTaken:
        if record.get("managed") and int(record.get("port") or 0) == port:
            raise  # the recorded port: clients hold it, another one would strand them
        return _record(_start_one(store, home, fast, services.free_port(), creds))  # a fresh pick, taken first


def _start_one(store: Store, home: Path, fast: bool, port: int, creds: Credentials) -> services.Running:
    data = home / store
    if store == "postgres":
        running = services.start_postgres(data, port, fast=fast, password=creds.postgres["postgres"])
        try:
            _roles(running.url, creds)
        except BaseException:
            services.stop_postgres(data)
            raise
        owner = creds_mod.PG_OWNER
        return replace(running, url=creds_mod.pg_url(owner, creds.postgres[owner], running.port))
    if store == "nats":
        return natsserver.start_nats(data, port, users=creds_mod.nats_users(creds))
    data.mkdir(parents=True, exist_ok=True)
    users_file = data / "users.json"
    creds_mod.write_private(users_file, json.dumps(creds_mod.clickhouse_users_document(creds), indent=2) + "\n",
                            services.service_account("clickhouse"))
    running = services.start_clickhouse(data, port, users_file=users_file)
    return replace(running, url=creds_mod.clickhouse_url("sco", creds.clickhouse["sco"], running.port))


def _roles(superuser_url: str, creds: Credentials) -> None:
    """The owner and component roles and the database ``sco`` (the only use of the superuser)."""
    import psycopg

    from .pgroles import create_roles

    with psycopg.connect(superuser_url, autocommit=True) as conn:
        create_roles(conn, creds.postgres)


Decision = Literal["external", "reuse", "start"]


def plan_up(records: dict[str, Any], environ: Mapping[str, str], healthy: Mapping[str, bool]) -> dict[Store, Decision]:
    """What ``up`` does with each store: use the URL given in the environment, reuse a healthy server it
    started before, or start one (pure: the caller observes health and applies the plan)."""
    plan: dict[Store, Decision] = {}
    for store in STORES:
        record = records.get(store) or {}
        if environ.get(ENV_VARS[store]):
            plan[store] = "external"
        elif record.get("managed") and healthy.get(store, False):
            plan[store] = "reuse"
        else:
            plan[store] = "start"
    return plan


def up(home: Path | None = None, *, env: dict[str, str] | None = None, fast: bool = False,
       nats_cluster: int = 1) -> list[ServiceStatus]:
    """Start or reuse every store; return what was done for each. ``nats_cluster``: 1 (one nats-server) or
    3 (a JetStream cluster of three; streams at 3 replicas)."""
    if nats_cluster not in (1, 3):
        raise ValueError(f"NCL001 nats_cluster={nats_cluster}: NATS runs as 1 server or a cluster of 3 (JetStream "
                         "needs a majority of an odd number of servers); use 1 or 3")
    home = (home or sco_home()).resolve()
    environ = os.environ if env is None else env
    out: list[ServiceStatus] = []
    with _locked(home):
        home.chmod(0o711)  # the servers' accounts reach their data directories; no one else lists it
        creds = creds_mod.load_or_create(home)
        state = _read(home)
        decisions = plan_up(state["services"], environ, {s: _healthy(r) for s, r in state["services"].items()})
        record = state["services"].get("nats") or {}
        running = nats_size(record) if record.get("managed") else nats_cluster
        if running != nats_cluster and (decisions["nats"] == "reuse" or any(
                services.pid_alive(int(m["pid"])) for m in _members(record) if m.get("pid"))):
            raise RuntimeError(f"NCL002 NATS runs as {running} server(s) in {home}, not {nats_cluster}: run `sco down` "
                               f"first (the streams stay under {home / 'nats'} only for the same size), or pass "
                               f"--nats-cluster {running}")
        to_start: list[Store] = []
        for store, decision in decisions.items():
            record = state["services"].get(store) or {}
            if decision == "external":
                state["services"][store] = {"url": environ[ENV_VARS[store]], "managed": False}
                out.append(ServiceStatus(store, environ[ENV_VARS[store]], False, None, True, "external"))
            elif decision == "reuse":
                out.append(ServiceStatus(store, record["url"], True, record["pid"], True, "reused"))
            else:
                if store == "postgres" and record.get("managed"):
                    services.stop_postgres(home / store)  # a stale postmaster.pid from a crash
                to_start.append(store)
        # The servers start in parallel (PostgreSQL's initdb and chDB's import dominate). Each is recorded as
        # soon as it listens, so `sco down` stops it even when this process is killed before the others are up.
        failures: dict[Store, BaseException] = {}
        ports = services.choose_ports(to_start, state["services"], services.free_ports(len(to_start)),
                                      services.port_free)
        with ThreadPoolExecutor(max_workers=len(STORES)) as pool:
            futures = {pool.submit(_start, store, home, fast, port, creds, nats_cluster,
                                   state["services"].get(store) or {}): store
                       for store, port in zip(to_start, ports, strict=True)}
            for future in as_completed(futures):
                store = futures[future]
                exc = future.exception()
                if exc is not None:
                    failures[store] = exc
                    continue
                record = future.result()
                state["services"][store] = record
                out.append(ServiceStatus(store, record["url"], True, record["pid"], True, "started"))
                _write(home, state, creds)
        _write(home, state, creds)
        if failures:
            raise failures[min(failures, key=STORES.index)]
    return sorted(out, key=lambda s: STORES.index(s.name))


def mint_agent(region: str, instance: str, home: Path | None = None, *, password: str | None = None,
               partition: str | None = None) -> str:
    """A NATS credential for one instance's agent (``sco.stack.credentials.agent_user``), added to the running
    nats-server (configuration rewritten, SIGHUP); returns the agent's URL. Idempotent per instance.

    ``password``: the one the launch's cloud-config carries (``controllers.controller.userdata``); without it
    the stack generates one. A different password for an instance already minted replaces the old one.
    ``partition``: the instance's partition (``region/cluster``), the only one whose agent bundle the
    distributor serves it (without it: its region's).
    """
    key = f"{region}/{instance}"
    with _managed_nats(home, "mints its own agent credentials") as (home, record, creds):
        if key not in creds.agents or (password is not None and creds.agents[key] != password):
            secret = password if password is not None else creds_mod.generate().nats["admin"]
            creds = replace(creds, agents={**creds.agents, key: secret})
            if partition is not None:
                creds = replace(creds, agent_partitions={**creds.agent_partitions, key: partition})
            _publish_agents(home, record, creds, creds_mod.agent_user(region, instance, secret), accepted=True)
        user = creds_mod.agent_user(region, instance, creds.agents[key])
        return creds_mod.nats_urls(user.name, user.password, [int(m["port"]) for m in _members(record)])


def forget_agent(region: str, instance: str, home: Path | None = None) -> bool:
    """Remove one instance's NATS user (ADR-31): out of the credentials file (so the distributor refuses it
    too) and out of the running nats-server (configuration rewritten, SIGHUP), returning once the server
    refuses its password. True when there was such a user; idempotent."""
    key = f"{region}/{instance}"
    with _managed_nats(home, "removes its own agent users") as (home, record, creds):
        if key not in creds.agents:
            return False
        removed = creds_mod.agent_user(region, instance, creds.agents[key])
        creds = replace(creds, agents={k: v for k, v in creds.agents.items() if k != key},
                        agent_partitions={k: v for k, v in creds.agent_partitions.items() if k != key})
        _publish_agents(home, record, creds, removed, accepted=False)
        return True


@contextmanager
def _managed_nats(home: Path | None, external: str) -> Iterator[tuple[Path, dict[str, Any], Credentials]]:
    """Under the stack's lock: the home, the NATS record ``sco up`` keeps and the stack's credentials; refused
    when the NATS is not one ``sco up`` started (an external NATS ``external``)."""
    home = (home or sco_home()).resolve()
    with _locked(home):
        record = _read(home)["services"].get("nats") or {}
        if not record.get("managed"):
            raise RuntimeError(f"no NATS started by `sco up` in {home}: an external NATS {external} "
                               "(docs/security.md)")
        yield home, record, creds_mod.load_or_create(home)


def _publish_agents(home: Path, record: dict[str, Any], creds: Credentials, user: creds_mod.NatsUser, *,
                    accepted: bool) -> None:
    """Write the credentials, make every member reread its users, and return once each accepts ``user``
    (``accepted=False``: refuses it)."""
    creds_mod.write_private(home / creds_mod.CREDENTIALS_FILE, creds.to_json())
    _reconfigure_nats(record, creds)
    for member in _members(record):
        natsserver.await_nats_user(int(member["port"]), user.name, user.password, accepted=accepted)


def _reconfigure_nats(record: dict[str, Any], creds: Credentials) -> None:
    """Rewrite every member's configuration with the stack's users and make it reread it (SIGHUP)."""
    routes = tuple(int(m["route_port"]) for m in record.get("members", []))
    for member in _members(record):
        cluster = None
        if routes:
            cluster = creds_mod.NatsCluster(str(record.get("cluster", CLUSTER_NAME)), int(member["route_port"]), routes,
                                            creds.nats[creds_mod.NATS_ROUTE_USER])
        natsserver.write_nats_config(Path(member["data_dir"]), int(member["port"]), creds_mod.nats_users(creds),
                                   cluster=cluster)
        natsserver.reload_nats(int(member["pid"]))


def agent_relay_url(home: Path | None = None) -> str:
    """The stack's NATS URL for agents, without credentials (each instance logs in as its own user); a
    cluster's first member (``agent_relay_urls``: every member)."""
    return agent_relay_urls(home)[0]


def agent_relay_urls(home: Path | None = None) -> list[str]:
    """The URL of every server of the stack's NATS for agents, without credentials."""
    home = (home or sco_home()).resolve()
    record = _read(home)["services"].get("nats") or {}
    if not record.get("managed"):
        raise RuntimeError(f"no NATS started by `sco up` in {home}: give the agents' relay URL instead")
    return [f"nats://127.0.0.1:{int(m['port'])}" for m in _members(record)]


class StackAgentCredentials:
    """``controllers.controller.userdata.AgentCredentials`` on the stack's NATS: ``mint_agent`` with the
    launch's password, ``forget_agent`` when the instance ended."""

    def __init__(self, home: Path | None = None) -> None:
        """The stack under ``home`` (default ``$SCO_HOME``)."""
        self.home = home

    def mint(self, region: str, instance_id: str, password: str, partition: str | None = None) -> None:
        """Add ``agent.<region>.<instance_id>`` to the running nats-server with ``password``."""
        mint_agent(region, instance_id, self.home, password=password, partition=partition)

    def forget(self, region: str, instance_id: str) -> bool:
        """Remove ``agent.<region>.<instance_id>`` from the running nats-server; True when it existed."""
        return forget_agent(region, instance_id, self.home)


def down(home: Path | None = None) -> list[ServiceStatus]:
    """Stop what ``up`` started; external stores are left alone."""
    home = (home or sco_home()).resolve()
    out: list[ServiceStatus] = []
    if not stack_file(home).is_file():
        return out
    with _locked(home):
        state = _read(home)
        for store in STORES:
            record = state["services"].get(store)
            if not record:
                continue
            if not record.get("managed"):
                out.append(ServiceStatus(store, record.get("url"), False, None, True, "external"))
                continue
            if store == "postgres":
                services.stop_postgres(home / store)
            for member in _members(record):
                if member.get("pid") and services.pid_alive(int(member["pid"])):
                    # each server leads its own process group; the postmaster stops its backends itself
                    services.stop_pid(int(member["pid"]), group=store != "postgres")
            out.append(ServiceStatus(store, record.get("url"), True, record.get("pid"), False, "stopped"))
            del state["services"][store]
        _write(home, state)
    return out


def status(home: Path | None = None, *, env: dict[str, str] | None = None) -> list[ServiceStatus]:
    """What is configured for each store and whether it answers."""
    home = (home or sco_home()).resolve()
    environ = os.environ if env is None else env
    state = _read(home)
    out: list[ServiceStatus] = []
    for store in STORES:
        external = environ.get(ENV_VARS[store])
        record = state["services"].get(store)
        if external:
            out.append(ServiceStatus(store, external, False, None, _reachable(external), "external"))
        elif not record:
            out.append(ServiceStatus(store, None, False, None, False, "missing"))
        elif not record.get("managed"):
            out.append(ServiceStatus(store, record["url"], False, None, _reachable(record["url"]), "external"))
        else:
            healthy = _healthy(record)
            out.append(ServiceStatus(store, record["url"], True, record.get("pid"), healthy,
                                     "running" if healthy else "down"))
    return out


def _reachable(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.port and parts.scheme not in ("http", "https", "postgresql", "postgres", "nats"):
        return False
    default = {"http": 8123, "https": 8443, "postgresql": 5432, "postgres": 5432, "nats": 4222}
    return services.port_open(parts.port or default.get(parts.scheme, 0), parts.hostname or "127.0.0.1", 1.0)
