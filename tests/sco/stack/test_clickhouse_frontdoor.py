"""The front end as two processes: the guard (TCP, authentication, bodies; no chDB) and the engine behind it on a
private Unix socket (``sco.stack.clickhouse_http.frontdoor``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bench.clickhouse_bomb import engine_pid, measure, vm_hwm_kib
from sco.stack.clickhouse_http.auth import load_users_file
from sco.stack.clickhouse_http.front import PEER_HEADER
from sco.stack.clickhouse_http.frontdoor import GuardServer
from sco.stack.clickhouse_http.relay import ResponseFraming
from testkit.clickhouse import WRITER
from testkit.httpraw import read_request
from testkit.paths import REPO
from tests.sco.stack.frontend_helpers import PASSWORDS, streamed, users_file
from tests.stores.helpers import http


@dataclass
class Guarded:
    guard: subprocess.Popen[str]
    engine: int
    plain_url: str

    @property
    def url(self) -> str:
        return self.plain_url.replace("http://", f"http://{WRITER}:{PASSWORDS[WRITER]}@")


def _start() -> Guarded:
    guard = subprocess.Popen([sys.executable, "-m", "sco.stack.clickhouse_http", "-", "0", "--users-file",
                              str(users_file())], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert guard.stdout is not None
    url = guard.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    return Guarded(guard, engine_pid(guard.pid), url)


def _stop(running: Guarded, sig: int = signal.SIGTERM) -> int:
    """Signal the guard, wait for it and close its pipe; its exit status."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(running.guard.pid, sig)
    try:
        return running.guard.wait(timeout=60)
    finally:
        assert running.guard.stdout is not None
        running.guard.stdout.close()


def _gone(pid: int, within_s: float = 60.0) -> bool:
    """Whether ``pid`` is gone (or a zombie) within ``within_s``; left as soon as it is. Generous: the kernel's
    signal arrives at once, but a loaded machine may take a while to run the dying process's exit."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
                return True  # a zombie: dead, not yet reaped by its (dead) parent's reaper
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def guarded() -> Iterator[Guarded]:
    running = _start()
    try:
        yield running
    finally:
        _stop(running)


def _engine_socket_dir(running: Guarded) -> Path:
    argv = Path(f"/proc/{running.engine}/cmdline").read_bytes().split(b"\0")
    return Path(argv[argv.index(b"--engine-socket") + 1].decode()).parent


@pytest.mark.services
def test_the_guard_has_no_chdb_mapped_and_stays_small_while_the_engine_holds_chdb(guarded: Guarded) -> None:
    assert http(guarded.url + "/", b"SELECT 1").body == b"1\n"
    guard_maps = Path(f"/proc/{guarded.guard.pid}/maps").read_text()
    assert "chdb" not in guard_maps.lower()
    assert "chdb" in Path(f"/proc/{guarded.engine}/maps").read_text().lower()
    assert vm_hwm_kib(guarded.guard.pid) < 128 << 10


@pytest.mark.services
def test_the_engines_socket_directory_is_private_to_the_account() -> None:
    running = _start()
    try:
        private = _engine_socket_dir(running)
        info = private.stat()
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
        assert stat.S_ISSOCK((private / "engine.sock").stat().st_mode)
    finally:
        assert _stop(running) == 0  # SIGTERM stops both cleanly
    assert _gone(running.engine) and not private.exists()


@pytest.mark.services
@pytest.mark.slow
def test_the_guard_refuses_a_gzip_bomb_with_307_its_peak_under_256_mib_and_the_engines_not_rising() -> None:
    got = measure()
    assert got.refused, (got.status, got.reply[:200])
    assert got.guard_peak_kib <= 256 << 10
    assert got.engine_rise_mib < 16


@pytest.mark.services
def test_kill_9_of_the_guard_takes_the_engine_down_within_seconds() -> None:
    running = _start()
    private = _engine_socket_dir(running)
    assert _stop(running, signal.SIGKILL) == -signal.SIGKILL
    assert _gone(running.engine)
    assert private.exists()  # nobody is left to remove it: a kill -9 leaves the empty directory and its socket
    again = _start()    # the next guard removes it
    try:
        assert not private.exists() and _engine_socket_dir(again).exists()
    finally:
        assert _stop(again) == 0


def test_only_this_accounts_engine_directories_whose_guard_is_gone_are_removed(tmp_path: Path) -> None:
    from sco.stack.clickhouse_http.frontdoor import remove_stale_engine_dirs

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    zombie = subprocess.Popen(["sleep", "60"])   # killed, not reaped yet: as a guard after kill -9
    zombie.kill()
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    names = ("dead", "zombie", "alive", "starting", "old")
    dirs = {name: tmp_path / f"sco-clickhouse-engine-{name}" for name in names}
    for d in dirs.values():
        d.mkdir(mode=0o700)
    (dirs["dead"] / "guard.pid").write_text(str(gone.pid))
    (dirs["zombie"] / "guard.pid").write_text(str(zombie.pid))
    (dirs["alive"] / "guard.pid").write_text(str(os.getpid()))
    os.utime(dirs["old"], (time.time() - 120, time.time() - 120))   # no pid a minute after: never started
    (tmp_path / "sco-clickhouse-engine-a-file").write_text("")
    try:
        removed = remove_stale_engine_dirs(str(tmp_path))
    finally:
        zombie.wait()
    assert sorted(removed) == sorted(str(dirs[n]) for n in ("dead", "zombie", "old"))
    assert dirs["alive"].exists() and dirs["starting"].exists()


@pytest.mark.services
def test_the_guard_exits_non_zero_when_the_engine_exits() -> None:
    running = _start()
    private = _engine_socket_dir(running)
    os.kill(running.engine, signal.SIGKILL)
    try:
        assert running.guard.wait(timeout=30) == 1
    finally:
        _stop(running)
    assert not private.exists()  # the guard cleaned up on its way out


@pytest.mark.services
def test_a_streamed_result_over_1_mib_arrives_through_the_guard_whole(guarded: Guarded) -> None:
    reply = streamed(guarded.url + "/?query=SELECT+number+FROM+numbers(500000)")
    assert reply.complete and reply.status == 200
    assert reply.headers.get("Transfer-Encoding") == "chunked"
    assert len(reply.body) > 1 << 20
    assert reply.body.split(b"\n")[-2] == b"499999"


@pytest.mark.services
def test_a_mid_stream_exception_arrives_through_the_guard_and_the_connection_is_closed(guarded: Guarded) -> None:
    reply = streamed(guarded.url + "/?query=SELECT+throwIf(number+%3D+2000000)+FROM+numbers(3000000)")
    assert reply.status == 200 and not reply.complete  # no final 0-chunk
    assert b"__exception__" in reply.body and b"FUNCTION_THROW_IF_VALUE_IS_NON_ZERO" in reply.body


@pytest.mark.services
def test_two_requests_share_one_keep_alive_connection_through_the_guard(guarded: Guarded) -> None:
    parts = urlsplit(guarded.plain_url)
    connection = HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    auth = {"Authorization": http_basic()}
    try:
        answers = []
        for query in (b"SELECT 1", b"SELECT 2"):
            connection.request("POST", "/", body=query, headers=auth)
            response = connection.getresponse()
            answers.append(response.read())
            assert not response.will_close
            if query == b"SELECT 1":
                first = connection.sock
        assert answers == [b"1\n", b"2\n"] and connection.sock is first
    finally:
        connection.close()


@pytest.mark.services
def test_a_compressed_insert_is_decoded_by_the_guard_and_stored_by_the_engine(guarded: Guarded) -> None:
    http(guarded.url + "/", b"CREATE TABLE IF NOT EXISTS gz (s String) ENGINE = Memory")
    rows = b"".join(b"row-%d\n" % i for i in range(100_000))
    reply = http(guarded.url + "/?query=INSERT+INTO+gz+FORMAT+LineAsString", zlib.compress(rows),
                 {"Content-Encoding": "deflate"})
    assert reply.status == 200, reply.body[:300]
    assert http(guarded.url + "/", b"SELECT count() FROM gz").body == b"100000\n"


@pytest.mark.services
def test_a_wrong_password_is_refused_by_the_guard_without_reading_the_body(guarded: Guarded) -> None:
    reply = http(guarded.plain_url.replace("http://", f"http://{WRITER}:wrong@") + "/", b"SELECT 1")
    assert reply.status == 401 and b"AUTHENTICATION_FAILED" in reply.body
    assert reply.headers.get("X-ClickHouse-Exception-Code") == "516"


def http_basic() -> str:
    import base64

    return "Basic " + base64.b64encode(f"{WRITER}:{PASSWORDS[WRITER]}".encode()).decode()


# -- the guard against a fake engine: what the engine receives, without chDB -------------------------------------
class _FakeEngine:
    """A Unix-socket server that records each request it gets and answers with ``reply``."""

    def __init__(self, reply: bytes) -> None:
        self.dir = tempfile.mkdtemp(prefix="sco-fake-engine-")
        self.path = os.path.join(self.dir, "engine.sock")
        self.reply = reply
        self.requests: list[bytes] = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                request = read_request(conn)
                if request is None:
                    continue
                self.requests.append(request)
                conn.sendall(self.reply)

    def close(self) -> None:
        self._sock.close()


def _guard(engine: _FakeEngine) -> tuple[GuardServer, threading.Thread]:
    server = GuardServer("127.0.0.1", 0, load_users_file(users_file()), engine.path, "test")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


def test_a_peer_header_sent_by_a_client_is_replaced_by_the_real_peer_and_the_body_arrives_decoded() -> None:
    engine = _FakeEngine(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
    server, thread = _guard(engine)
    try:
        host, port = server.server_address[:2]
        with socket.create_connection((str(host), int(port)), timeout=10) as sock:
            body = zlib.compress(b"SELECT 1")
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: " + http_basic().encode()
                         + b"\r\n" + PEER_HEADER.encode() + b": 10.9.9.9:1\r\nContent-Encoding: deflate\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
            assert sock.recv(65536).endswith(b"\r\n\r\nok\n")
            local = sock.getsockname()
        (request,) = engine.requests
        head, _, sent = request.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        assert sent == b"SELECT 1"
        assert [line for line in lines if line.lower().startswith(PEER_HEADER.lower().encode())] == [
            f"{PEER_HEADER}: {local[0]}:{local[1]}".encode()]
        assert b"Content-Length: 8" in lines and b"Connection: close" in lines
        assert not any(line.lower().startswith(b"content-encoding") for line in lines)
        assert any(line.startswith(b"Authorization: Basic ") for line in lines)  # the engine authenticates again
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        engine.close()


@pytest.mark.parametrize(("response", "done", "reusable"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", True, True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", True, True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n11\r\n\r\n__exception__\r\n\r\n", False, False),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nnot a size\r\n0\r\n\r\n", False, False),
    (b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno", True, False),
    (b"HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nuntil the close", False, False),
])
def test_the_relay_knows_a_complete_framed_response_from_one_cut_short(response: bytes, done: bool,
                                                                        reusable: bool) -> None:
    framing = ResponseFraming()
    used = sum(framing.feed(response[i:i + 5]) for i in range(0, len(response), 5))  # in small pieces
    assert (framing.done, framing.reusable) == (done, reusable)
    assert used == len(response)


@pytest.mark.services
def test_a_client_that_goes_away_mid_query_gets_its_read_only_query_cancelled_in_the_engine(guarded: Guarded) -> None:
    marker = f"gone_{os.getpid()}_{time.monotonic_ns()}"
    running = (f"/?query=SELECT+count()+FROM+system.processes+WHERE+query+LIKE+'%25{marker}%25'"
               "+AND+query+NOT+LIKE+'%25system.processes%25'")
    parts = urlsplit(guarded.plain_url)
    # 200 s of sleepEachRow: it outlasts both 60 s waits, so "not cancelled" still fails the second
    with socket.create_connection((parts.hostname or "127.0.0.1", int(parts.port or 0)), timeout=10) as sock:
        sock.sendall(f"GET /?query=SELECT+sleepEachRow(0.5)+FROM+numbers(400)+SETTINGS+max_block_size%3D1+--+{marker}"
                     f" HTTP/1.1\r\nHost: x\r\nAuthorization: {http_basic()}\r\n\r\n".encode())
        deadline = time.monotonic() + 60
        while http(guarded.url + running).body != b"1\n":
            assert time.monotonic() < deadline, "the query never started"
            time.sleep(0.1)
    deadline = time.monotonic() + 60  # the guard passes the close on; the engine's DisconnectWatch cancels
    while http(guarded.url + running).body != b"0\n":
        assert time.monotonic() < deadline, "the query still runs 60 s after its client went away"
        time.sleep(0.2)


@pytest.mark.services
def test_a_large_plain_insert_passes_through_the_guard_in_spooled_files_not_in_its_memory(guarded: Guarded) -> None:
    http(guarded.url + "/", b"CREATE TABLE IF NOT EXISTS plain (s String) ENGINE = Null")
    before = vm_hwm_kib(guarded.guard.pid)
    rows = b"x" * 99 + b"\n"
    body = rows * ((48 << 20) // len(rows))  # 48 MiB, past the 8 MiB kept in memory
    reply = http(guarded.url + "/?query=INSERT+INTO+plain+FORMAT+LineAsString", body)
    assert reply.status == 200, reply.body[:300]
    assert json.loads(reply.headers["X-ClickHouse-Summary"])["written_rows"] == str(len(body) // len(rows))
    assert vm_hwm_kib(guarded.guard.pid) - before < 32 << 10  # not the 48 MiB body, nor a copy of it
