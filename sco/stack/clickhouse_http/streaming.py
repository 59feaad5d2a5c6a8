"""The response side of a query, as a ClickHouse server sends it: streamed, compressed on request, with
progress headers while it runs and the in-band exception block when it fails after output went out.

- Output is buffered up to ``buffer_bytes`` (1 MiB, the server's ``DBMS_DEFAULT_BUFFER_SIZE``): a query
  that ends or fails within it gets an ordinary response (``Content-Length``, or the error's status).
  Past it the headers go out with ``Transfer-Encoding: chunked`` and every further MiB is sent as it is
  produced, so a result never has to fit in memory.
- ``send_progress_in_http_headers=1`` sends the status line and ``X-ClickHouse-Progress`` headers every
  ``http_headers_progress_interval_ms`` (default 100) while no output has been sent yet.
- ``wait_end_of_query=1`` holds the whole output (in a temporary file past 1 MiB) until the statement
  ended, so any error gets its status and the summary is complete.
- ``X-ClickHouse-Summary`` is written last before the body (what was known by then, as on a server),
  ``X-ClickHouse-Exception-Tag`` on every response.
- An error after the headers went out cannot change the status (200): the body gets ClickHouse's
  exception block (``__exception__``, the tag, the message, its length, the tag, ``__exception__``) and
  the chunked body is left without its final 0-chunk, so no client can take the output as complete
  (clickhouse-connect raises the server's message).
"""

from __future__ import annotations

import io
import json
import secrets
import shutil
import string
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from .compression import Compressor, make_compressor

__all__ = ["EXCEPTION_TAG_LENGTH", "ResponseHandler", "ResponseWriter", "exception_block", "new_exception_tag"]

EXCEPTION_TAG_LENGTH = 16
_TAG_ALPHABET = string.ascii_lowercase + string.digits
_MAX_EXCEPTION_MESSAGE = 16 << 10
BUFFER_BYTES = 1 << 20


class ResponseHandler(Protocol):
    """The parts of ``BaseHTTPRequestHandler`` the writer uses."""

    wfile: io.BufferedIOBase
    request_version: str
    command: str
    close_connection: bool

    def send_response(self, code: int, message: str | None = None) -> None:
        """Start the response with its status line."""

    def send_header(self, keyword: str, value: str) -> None:
        """Add one header to those not yet sent."""

    def flush_headers(self) -> None:
        """Write the buffered status line and headers to the client."""

    def end_headers(self) -> None:
        """End the headers and send them; the body follows."""


def new_exception_tag() -> str:
    """A random tag that marks where an in-band exception starts and ends in a streamed response body."""
    return "".join(secrets.choice(_TAG_ALPHABET) for _ in range(EXCEPTION_TAG_LENGTH))


def exception_block(message: str, tag: str) -> bytes:
    """ClickHouse's in-band exception (server 25.11+), which clickhouse-connect looks for after the tag."""
    text = message.encode(errors="replace")[:_MAX_EXCEPTION_MESSAGE]
    if not text.endswith(b"\n"):
        text += b"\n"
    return (b"\r\n__exception__\r\n" + tag.encode() + b"\r\n" + text + str(len(text)).encode() + b" "
            + tag.encode() + b"\r\n__exception__\r\n")


class ResponseWriter:
    """Sends one response body as it is produced (see the module docstring)."""

    def __init__(self, handler: ResponseHandler, headers: dict[str, str], *, encoding: str | None = None,
                 send_progress: bool = False, progress_interval_s: float = 0.1, buffer_bytes: int = BUFFER_BYTES,
                 wait_end: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self._h = handler
        self._headers = dict(headers)
        self.tag = new_exception_tag()
        self._headers["X-ClickHouse-Exception-Tag"] = self.tag
        self._compressor: Compressor | None = make_compressor(encoding) if encoding else None
        self._send_progress = send_progress
        self._interval_s = progress_interval_s
        self._buffer_bytes = buffer_bytes
        self._clock = clock
        self._last_progress = clock()
        self._pending: list[bytes] = []
        self._pending_size = 0
        self.started = False  # the status line went out: the status can no longer change
        self.committed = False  # the headers are complete: the body is being sent
        self._chunked = handler.request_version != "HTTP/1.0"
        self._head = handler.command == "HEAD"
        self._body_headers: dict[str, str] = {}
        self._wrote = False
        # wait_end_of_query=1: the whole output first (past buffer_bytes in a temporary file), then the response
        self._spool: Any = (  # closed by finish(), fail() or discard()
            tempfile.SpooledTemporaryFile(max_size=buffer_bytes) if wait_end else None)  # noqa: SIM115
        self._lock = threading.Lock()  # the headers: progress (from chDB's callback) vs. the commit

    # -- headers ---------------------------------------------------------------------------------------------
    def set_body_headers(self, headers: dict[str, str]) -> None:
        """Headers that depend on the statement (``Content-Type``, ``X-ClickHouse-Format``)."""
        self._body_headers = dict(headers)

    def _start(self) -> None:
        if not self.started:
            self.started = True
            self._h.send_response(200)
            for name, value in self._headers.items():
                self._h.send_header(name, value)

    def progress(self, values: dict[str, int]) -> None:
        """The running totals of the statement; sent as ``X-ClickHouse-Progress`` when asked for."""
        if not self._send_progress or self.committed or self._head:
            return
        with self._lock:  # chDB calls this while the handler thread waits in a fetch; never both writing
            self._progress_locked(values)

    def _progress_locked(self, values: dict[str, int]) -> None:
        if self.committed:
            return
        now = self._clock()
        if now - self._last_progress < self._interval_s:
            return
        self._last_progress = now
        self._start()
        self._h.send_header("X-ClickHouse-Progress", json.dumps({k: str(v) for k, v in values.items()},
                                                                separators=(",", ":")))
        try:  # called from inside chDB: a client that went away is noticed at the next write instead
            self._h.flush_headers()
        except OSError:
            self._send_progress = False

    def _commit(self, summary: dict[str, str], length: int | None, extra: dict[str, str] | None = None) -> None:
        with self._lock:
            self._commit_locked(summary, length, extra)

    def _commit_locked(self, summary: dict[str, str], length: int | None, extra: dict[str, str] | None) -> None:
        self._start()
        self.committed = True
        for name, value in {**self._body_headers, **(extra or {})}.items():
            self._h.send_header(name, value)
        if self._compressor is not None and self._wrote:
            self._h.send_header("Content-Encoding", self._compressor.encoding)
        if length is not None:
            self._h.send_header("Content-Length", str(length))
        elif self._chunked:
            self._h.send_header("Transfer-Encoding", "chunked")
        else:
            self._h.send_header("Connection", "close")  # HTTP/1.0: the body ends where the connection does
        self._h.send_header("X-ClickHouse-Summary", json.dumps(summary, separators=(",", ":")))
        self._h.end_headers()

    # -- body ------------------------------------------------------------------------------------------------
    def _send(self, data: bytes | memoryview) -> None:
        if not len(data) or self._head:
            return
        if self._chunked:  # three writes rather than one joined copy of a block that may be megabytes
            self._h.wfile.write(b"%x\r\n" % len(data))
            self._h.wfile.write(data)
            self._h.wfile.write(b"\r\n")
        else:
            self._h.wfile.write(data)

    def _take_pending(self) -> bytes:
        data = b"".join(self._pending)
        self._pending, self._pending_size = [], 0
        return data

    def write(self, data: bytes | memoryview, summary: Callable[[], dict[str, str]]) -> None:
        """Add output; past the buffer the headers (with ``summary()``) and the buffered output go out."""
        self._wrote = self._wrote or bool(len(data))
        if self.committed and self._compressor is None:
            self._send(data)  # streaming already: no copy
            return
        out = self._compressor.compress(data) if self._compressor is not None else bytes(data)
        if self._spool is not None:
            self._spool.write(out)  # wait_end_of_query: nothing goes out before the end
            return
        if out:
            self._pending.append(out)
            self._pending_size += len(out)
        if self._pending_size >= self._buffer_bytes:
            if not self.committed:
                self._commit(summary(), None)
            self._send(self._take_pending())

    def finish(self, summary: dict[str, str]) -> None:
        """The statement ended: send what is left and end the body."""
        if self._spool is not None:
            self._finish_spooled(summary)
            return
        if not self.committed:
            body = b""
            if self._wrote:  # nothing written (DDL, SET, INSERT): an empty body, not an empty compressed stream
                body = self._take_pending() + (self._compressor.finish() if self._compressor is not None else b"")
            self._commit(summary, len(body))
            if not self._head:
                self._h.wfile.write(body)
            return
        tail = self._compressor.finish() if self._compressor is not None else b""
        self._send(self._take_pending() + tail)
        if self._chunked and not self._head:
            self._h.wfile.write(b"0\r\n\r\n")

    def discard(self) -> None:
        """The response will not be sent (an error before anything went out): drop what was held."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def _finish_spooled(self, summary: dict[str, str]) -> None:
        assert self._spool is not None
        with self._spool as spool:
            if self._wrote and self._compressor is not None:
                spool.write(self._compressor.finish())
            self._commit(summary, spool.tell())
            spool.seek(0)
            if not self._head:
                shutil.copyfileobj(spool, self._h.wfile, BUFFER_BYTES)
        self._spool = None

    def fail(self, code: int, message: str, summary: dict[str, str]) -> None:
        """The statement failed after the status line went out: the exception block ends the body.

        The connection is closed afterwards without the final 0-chunk (a server breaks the chunked
        stream the same way), so the output cannot be taken for a complete response.
        """
        assert self.started
        self._h.close_connection = True
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        if not self.committed:
            self._pending, self._pending_size = [], 0  # nothing of it went out: dropped, as a server does
            if self._compressor is not None:
                self._compressor = make_compressor(self._compressor.encoding)  # a stream of the block alone
                self._wrote = True
            self._commit(summary, None, {"X-ClickHouse-Exception-Code": str(code)})
        block = exception_block(message, self.tag)
        if self._compressor is not None:
            self._send(self._take_pending() + self._compressor.compress(block) + self._compressor.flush())
        else:
            self._send(self._take_pending() + block)
        self._h.wfile.flush()

