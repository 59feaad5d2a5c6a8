"""The guard: the small process that owns the front end's TCP port and every untrusted byte, chDB kept out of it.

As OpenSSH separates privileges, ``python -m sco.stack.clickhouse_http`` is two processes. The guard (this module;
it never imports chDB, nor a module that does) holds the listener, the connection cap, the deadlines, the cap on
connections waiting to authenticate, authentication (the same users file, before any body byte is read), the
body (``Content-Length`` or chunked) and its ``Content-Encoding``, undone with the same decompressed-size limit
(:mod:`.bodies`; a gzip bomb is refused here with 307 and costs the guard at most the spool's memory). The
engine — the existing server (:mod:`.server`) with chDB — is the guard's child, listening on a Unix socket in a
private directory (mode 0700); it authenticates again and does everything else. Per request the guard opens a
connection to it, sends the decoded body (:mod:`.relay`) and relays the response as it arrives.

Lifetimes: the engine dies with the guard, even on ``kill -9`` (``PR_SET_PDEATHSIG``, set by the engine itself
before it opens chDB); the guard exits 1 when the engine exits; SIGTERM or SIGINT to the guard stops both.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import IO, Any

from .auth import Users, authenticate, load_users_file
from .bodies import decompress_stream
from .disconnect import DisconnectWatch
from .errors import AuthConfigError
from .front import FrontHandler, FrontServer
from .protocol import ClickHouseError
from .relay import relay_response, request_head

__all__ = ["GuardServer", "serve"]

log = logging.getLogger("sco.clickhouse.frontdoor")
_PIECE = 1 << 20
_ENGINE_START_S = 300.0
_PREFIX = "sco-clickhouse-engine-"
_PID_FILE = "guard.pid"


def _engine_gone(detail: str) -> ClickHouseError:
    return ClickHouseError.make(210, "NETWORK_ERROR", f"the engine behind the front end is not answering "
                                f"({detail}); nothing was executed, or the outcome is unknown — retry")


class _GuardHandler(FrontHandler):
    server: GuardServer

    def _handle(self) -> None:
        path, params = self._target()
        if self._health_check(path, params):
            self._forward(None, 0)
            return
        query_id = params.get("query_id", b"").decode(errors="replace")
        try:
            authenticate(self.server.users, params, {k.lower(): v for k, v in self.headers.items()})
        except ClickHouseError as error:
            self.close_connection = True  # its body is never read: the connection cannot carry another request
            self._send_error(error, query_id)
            return
        self.server.unauthenticated.done(self.connection)
        try:
            body = self._body_within_deadline()
            decoded = decompress_stream(body, self.headers.get("Content-Encoding", ""), self.server.max_body_bytes)
        except ClickHouseError as error:
            self._send_error(error, query_id)
            return
        del body
        with decoded:
            length = decoded.seek(0, os.SEEK_END)
            decoded.seek(0)
            self._forward(decoded, length)

    def _forward(self, body: IO[bytes] | None, length: int) -> None:
        """Send the request to the engine and its response to the client (see :mod:`.relay`)."""
        engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with engine:
            try:
                engine.connect(self.server.engine_socket)
                engine.sendall(request_head(self.command, self.path, self.request_version, self.headers.items(),
                                            length, self._peer()))
                while body is not None and (piece := body.read(_PIECE)):
                    engine.sendall(piece)
            except OSError as exc:
                self._send_error(_engine_gone(exc.strerror or type(exc).__name__), "")
                return
            # the client's close reaches the engine as the end of its request stream: the engine cancels a read-only
            # query as it would for a client of its own (DisconnectWatch)
            token = self.server.watch.watch(self.connection, lambda: _shut(engine, socket.SHUT_WR))
            try:
                framing = relay_response(engine, self.connection, self.command == "HEAD")
            except OSError:
                self.close_connection = True  # the client went away or stopped reading
                return
            finally:
                self.server.watch.unwatch(token)
            if not framing.started:
                self._send_error(_engine_gone("it closed the connection without a response"), "")
            if not framing.reusable:
                self.close_connection = True  # cut short (a mid-stream exception) or ended by the close

    do_GET = do_POST = do_HEAD = _handle


def _shut(sock: socket.socket, how: int) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(how)


class GuardServer(FrontServer):
    """The guard's HTTP server: :class:`.front.FrontServer`'s bounds, authentication, and the engine behind it."""

    def __init__(self, host: str, port: int, users: Users | None, engine_socket: str, version: str,
                 verbose: bool = False, **bounds: Any) -> None:
        super().__init__(host, port, _GuardHandler, verbose, **bounds)
        self.users = users
        self.engine_socket = engine_socket
        self.version = version
        self.watch = DisconnectWatch()

    def server_close(self) -> None:
        """Close the listening socket, then stop the disconnect watcher and the deadline thread."""
        super().server_close()
        self.watch.close()


def _engine_argv(data_dir: str | None, socket_path: str, users_file: str | Path | None, verbose: bool) -> list[str]:
    return [sys.executable, "-m", "sco.stack.clickhouse_http", data_dir or "-", "--engine-socket", socket_path,
            "--guard-pid", str(os.getpid()),
            *(["--users-file", str(users_file)] if users_file is not None else ["--no-auth"]),
            *(["--verbose"] if verbose else [])]


def _copy_lines(stream: IO[str]) -> None:
    for line in stream:  # whatever the engine prints after its ready line goes where the guard's output goes
        print(line, end="", flush=True)


def _engine_answers(socket_path: str, timeout_s: float = 30.0) -> bool:
    """True once ``GET /ping`` on the engine's socket gets ``200``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(5)
            probe.connect(socket_path)
            probe.sendall(b"GET /ping HTTP/1.1\r\nHost: engine\r\nConnection: close\r\n\r\n")
            if probe.recv(64).startswith(b"HTTP/1.1 200"):
                return True
        time.sleep(0.05)
    return False


def _stop_engine(engine: subprocess.Popen[str]) -> None:
    if engine.poll() is None:
        engine.terminate()
        try:
            engine.wait(timeout=30)
        except subprocess.TimeoutExpired:
            engine.kill()
            engine.wait()


def serve(data_dir: str | None, host: str = "127.0.0.1", port: int = 8123, verbose: bool = False, *,
          users_file: str | Path | None = None, no_auth: bool = False) -> int:
    """Start the engine, then serve on ``host:port`` until SIGTERM/SIGINT or the engine's exit (then 1).

    ``port`` 0 picks a free one; the URL is the first line on stdout, printed once the engine answers.
    """
    if users_file is None and not no_auth:
        raise AuthConfigError()  # before the engine starts: nothing to undo
    users = load_users_file(users_file) if users_file is not None else None  # a bad file starts nothing
    base = tempfile.gettempdir()  # a Unix socket's path has at most 107 bytes
    base = base if len(base) <= 64 else "/tmp"
    remove_stale_engine_dirs(base)
    private = tempfile.mkdtemp(prefix=_PREFIX, dir=base)  # 0700
    Path(private, _PID_FILE).write_text(str(os.getpid()))
    socket_path = os.path.join(private, "engine.sock")
    server: GuardServer | None = None
    try:
        engine = subprocess.Popen(_engine_argv(data_dir, socket_path, users_file, verbose), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, text=True, process_group=0)  # group signals: the guard's
        try:
            assert engine.stdout is not None
            ready = engine.stdout.readline()
            if not ready:
                print(f"sco clickhouse serve: the engine exited ({engine.wait()}) before it was ready",
                      file=sys.stderr, flush=True)
                return 1
            version = str(json.loads(ready)["version"])
            threading.Thread(target=_copy_lines, args=(engine.stdout,), daemon=True).start()
            if not _engine_answers(socket_path):
                print("sco clickhouse serve: the engine does not answer on its socket", file=sys.stderr, flush=True)
                return 1
            server = GuardServer(host, port, users, socket_path, version, verbose)
            return _serve_until_stopped(server, engine)
        finally:
            if server is not None:
                server.server_close()
            _stop_engine(engine)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def remove_stale_engine_dirs(base: str, now: float | None = None) -> list[str]:
    """Remove this account's engine directories under ``base`` whose guard is gone (a ``kill -9`` leaves the empty
    directory and its dead socket behind: nobody is left to remove it); the directories removed. A directory whose
    guard has not written its pid yet is left alone for a minute (it may be starting now)."""
    removed = []
    now = time.time() if now is None else now
    for entry in Path(base).glob(f"{_PREFIX}*"):
        with contextlib.suppress(OSError, ValueError):
            if entry.stat().st_uid != os.getuid() or not entry.is_dir():
                continue
            if _answers(entry / "engine.sock"):
                continue   # a live engine (a guard from before the pid file, too)
            pid_file = entry / _PID_FILE
            if pid_file.exists() and _guard_alive(int(pid_file.read_text())):
                continue
            if not pid_file.exists() and now - entry.stat().st_mtime < 60:
                continue
            shutil.rmtree(entry)
            removed.append(str(entry))
    return removed


def _answers(path: Path) -> bool:
    """True when something accepts connections on the Unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _guard_alive(pid: int) -> bool:
    """True while a process ``pid`` runs: not gone, not a zombie (a guard killed with -9 stays one until its
    parent reaps it). A pid reused by another program keeps a stale directory a while longer, which is harmless;
    taking a live guard's directory would not be."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _serve_until_stopped(server: GuardServer, engine: subprocess.Popen[str]) -> int:
    stopping = threading.Event()
    exit_code = [0]

    def _stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    def _watch_engine() -> None:
        code = engine.wait()
        if not stopping.is_set():
            print(f"sco clickhouse serve: the engine exited ({code}); the front end stops", file=sys.stderr,
                  flush=True)
            exit_code[0] = 1
            server.shutdown()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    threading.Thread(target=_watch_engine, name="clickhouse-engine-watch", daemon=True).start()
    print(server.url, flush=True)
    server.serve_forever(poll_interval=0.2)
    stopping.set()
    return exit_code[0]
