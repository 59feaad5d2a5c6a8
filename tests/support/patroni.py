"""A Patroni cluster for tests (issue 18): one etcd and two Patroni-managed PostgreSQL 15 instances on free loopback
ports under one directory, from the packages deploy/testbed/patroni/up installs (Debian's ``patroni`` 3.0.2,
``etcd-server`` 3.4, ``postgresql-15``; tests/support/testbeds.py finds them).

The members run the production form, deploy/stores/patroni.yml, on loopback (``_config`` says what changes).
Authentication as in ``sco up``: SCRAM over loopback TCP for clients (the superuser ``postgres`` with a generated
password), a ``replicator`` role with its own password for streaming replication, no ``trust`` line. Replication is
synchronous (Patroni's ``synchronous_mode``): a commit the primary acknowledged is on the standby, so a failover
loses none. ``master_start_timeout: 0``: a primary whose PostgreSQL crashes is failed over at once rather than
restarted in place (the standby is promoted). etcd listens on loopback only, without authentication (a test bed).

As root, etcd and Patroni (hence PostgreSQL, which refuses root) run as the service account ``sco`` that the
embedded servers use (``sco.stack.services.service_account``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sco.stack import services
from testkit.paths import REPO
from tests.support.testbeds import patroni_tools

__all__ = ["PRODUCTION", "Member", "PatroniCluster"]

PRODUCTION = REPO / "deploy" / "stores" / "patroni.yml"   # the production form this bed runs


@dataclass(frozen=True)
class Member:
    name: str
    pg_port: int
    api_port: int
    home: Path

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"


class PatroniCluster:
    """``start()`` brings up etcd and the members and waits for a leader with a streaming synchronous standby."""

    def __init__(self, root: Path, members: int = 2, scope: str = "sco-failover") -> None:
        self.root, self.scope = root, scope
        self.tools = patroni_tools()
        ports = services.free_ports(2 + 2 * members)
        self.etcd_port, self.etcd_peer = ports[0], ports[1]
        self.members = [Member(f"pg{n}", ports[2 + 2 * n], ports[3 + 2 * n], root / f"pg{n}") for n in range(members)]
        self.password = secrets.token_urlsafe(18)
        self.replication_password = secrets.token_urlsafe(18)
        self.rewind_password = secrets.token_urlsafe(18)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    # --- lifetime ------------------------------------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> PatroniCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self._start_etcd()
            for m in self.members:
                self._start_member(m)
            self.wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            services.stop_pid(self.procs[name].pid, timeout=15.0)
        for m in self.members:  # a postmaster Patroni did not take down with it
            pid = self.postmaster_pid(m)
            if pid is not None:
                services.stop_pid(pid, timeout=10.0, group=False)
        self.procs.clear()

    def __enter__(self) -> PatroniCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what the clients see ----------------------------------------------------------------------------
    def url(self, database: str = "postgres") -> str:
        """The multi-host URL a component is given: every member, the one taking writes chosen by libpq."""
        hosts = ",".join(f"127.0.0.1:{m.pg_port}" for m in self.members)
        return (f"postgresql://postgres:{self.password}@{hosts}/{database}"
                "?target_session_attrs=read-write&connect_timeout=3")

    def roles(self) -> dict[str, str]:
        """Each member's role as the cluster's REST API reports it (``leader``, ``sync_standby``, ``replica``)
        with its state, e.g. ``{"pg0": "leader/running", "pg1": "sync_standby/streaming"}``."""
        for m in self.members:
            with contextlib.suppress(OSError, ValueError):
                doc = _get(m.api_port, "/cluster")
                return {x["name"]: f"{x['role']}/{x.get('state', '')}" for x in doc.get("members", [])}
        return {}

    def leader(self) -> Member | None:
        roles = self.roles()
        return next((m for m in self.members if roles.get(m.name, "").startswith("leader/running")), None)

    def wait_healthy(self, timeout: float, *, not_leader: str | None = None) -> Member:
        """Wait until a leader other than ``not_leader`` runs (and, with no ``not_leader``, a synchronous
        standby streams from it); returns the leader."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            roles = self.roles()
            leader = self.leader()
            standby = any(r.startswith("sync_standby/") and r.endswith(("streaming", "running"))
                          for r in roles.values())
            if leader is not None and leader.name != not_leader and (not_leader or standby):
                return leader
            time.sleep(0.2)
        raise TimeoutError(f"no healthy Patroni cluster within {timeout:.0f} s: {self.roles()} "
                           f"(logs under {self.root})")

    # --- faults ----------------------------------------------------------------------------------------
    def postmaster_pid(self, m: Member) -> int | None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((m.pgdata / "postmaster.pid").read_text().split()[0])
            if services.pid_alive(pid):
                return pid
        return None

    def kill_postgres(self, m: Member) -> int:
        """SIGKILL the member's postmaster and every process it started (its backends, walsender, ...), as a
        crash of the instance does, and wait until they are gone; returns the postmaster's pid."""
        pid = self.postmaster_pid(m)
        if pid is None:
            raise RuntimeError(f"{m.name} runs no PostgreSQL")
        doomed = [pid, *_children(pid)]
        for p in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(services.pid_alive(p) for p in doomed) and time.monotonic() < deadline:
            time.sleep(0.01)
        return pid

    # --- starting the processes ------------------------------------------------------------------------
    def _start_etcd(self) -> None:
        home = self.root / "etcd"
        home.mkdir(exist_ok=True)
        services._hand_over(home)  # the service account's, ancestors searchable (as the embedded servers)
        peer = f"http://127.0.0.1:{self.etcd_peer}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        argv = [self.tools["etcd"], "--name", "e0", "--data-dir", str(home / "data"), "--listen-client-urls", client,
                "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"e0={peer}", "--initial-cluster-state", "new", "--log-level", "warn"]
        self._spawn("etcd", argv, home, self.etcd_port)

    def _start_member(self, m: Member) -> None:
        m.home.mkdir(exist_ok=True)
        services._hand_over(m.home)
        config = m.home / "patroni.yml"
        config.write_text(yaml.safe_dump(self._config(m), sort_keys=False))
        config.chmod(0o600)
        account = services.service_account()
        if account is not None:
            os.chown(config, *account)
        self._spawn(m.name, [self.tools["patroni"], str(config)], m.home, m.api_port)

    def _spawn(self, name: str, argv: list[str], home: Path, port: int) -> None:
        account = services.service_account()
        as_user: dict[str, Any] = {} if account is None else {"user": account[0], "group": account[1],
                                                                "extra_groups": []}
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
        with open(home / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    cwd=str(home), start_new_session=True, **as_user)
        services._CHILDREN[proc.pid] = proc  # reaped by services.stop_pid
        self.procs[name] = proc
        services.wait_port(port, 30.0, proc, name)

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None and name == "etcd":
                raise RuntimeError(f"etcd exited with {proc.returncode}: {self.root / 'etcd' / 'etcd.log'}")

    def _config(self, m: Member) -> dict[str, Any]:
        """The production form (deploy/stores/patroni.yml) with this member's loopback ports, paths and passwords,
        plain TCP (no certificates on a test bed), shorter timers and fsync off."""
        doc: dict[str, Any] = yaml.safe_load(PRODUCTION.read_text())
        doc.update(scope=self.scope, name=m.name, log={"level": "INFO"},
                   restapi={"listen": f"127.0.0.1:{m.api_port}", "connect_address": f"127.0.0.1:{m.api_port}"},
                   etcd3={"hosts": [f"127.0.0.1:{self.etcd_port}"]})
        dcs = doc["bootstrap"]["dcs"]
        dcs.update(ttl=20, loop_wait=1, retry_timeout=5)
        dcs["postgresql"]["parameters"].update(fsync="off", max_connections=100)
        pg = doc["postgresql"]
        pg.update(listen=f"127.0.0.1:{m.pg_port}", connect_address=f"127.0.0.1:{m.pg_port}", data_dir=str(m.pgdata),
                  bin_dir=self.tools["pg_bin"], pgpass=str(m.home / "pgpass"),
                  parameters={"unix_socket_directories": str(m.home)},
                  pg_hba=list(dict.fromkeys(rule.replace("hostssl", "host").replace("0.0.0.0/0", "127.0.0.1/32")
                                            for rule in pg["pg_hba"])))
        for role, password in (("superuser", self.password), ("replication", self.replication_password),
                               ("rewind", self.rewind_password)):
            pg["authentication"][role]["password"] = password
        return doc


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
    return out


def _get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
        return json.loads(r.read())
