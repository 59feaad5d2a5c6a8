"""Mutual TLS terminated in plugpool's own code, in front of the gRPC server on a private Unix socket.

gRPC's C core refuses a bad client during the handshake and tells the application nothing: no callback, no
interceptor, no counter sees it (an open request upstream asks for exactly such a hook). So plugpool listens on the
configured address itself, completes the handshake with Python's ``ssl`` (client certificate required, TLS 1.2 or
later, ALPN ``h2``), records every refusal (:class:`RefusalLog`), and relays the bytes of each authenticated
connection to the gRPC server, which listens only on a Unix socket in a directory of mode 0700.

Bounded: a handshake must finish within ``handshake_timeout`` seconds, and at most ``max_handshakes`` connections
may be handshaking at once (the rest are closed at once), so slow or silent clients cannot hold the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import threading
from collections.abc import Callable
from pathlib import Path

from .config import TlsConfig
from .tls_refusals import Refusal, RefusalLog, classify

__all__ = ["HANDSHAKE_TIMEOUT_SECONDS", "MAX_HANDSHAKES", "TlsFront", "server_context", "split_address"]

log = logging.getLogger("plugpool.tls")
HANDSHAKE_TIMEOUT_SECONDS = 10.0
MAX_HANDSHAKES = 64
_CHUNK = 64 * 1024
_STOP_SECONDS = 10.0


def _load(what: str, path: Path, load: Callable[[], None]) -> None:
    try:
        load()
    except (OSError, ssl.SSLError) as exc:
        raise OSError(f"PPL012 cannot load tls.{what} {path} ({exc.strerror or exc}); check tls in the "
                      "configuration") from exc


def server_context(tls: TlsConfig) -> ssl.SSLContext:
    """The server side of mutual TLS: ``tls.cert``/``tls.key``, client certificates required from ``tls.clientCA``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    _load("cert/key", tls.cert, lambda: context.load_cert_chain(tls.cert, tls.key))
    _load("clientCA", tls.client_ca, lambda: context.load_verify_locations(cafile=tls.client_ca))
    context.set_alpn_protocols(["h2"])  # gRPC clients refuse a server that does not select h2
    return context


def split_address(address: str) -> tuple[str, int]:
    """("host", port) of a gRPC-style "host:port" ("[::1]:8086" for IPv6)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise OSError(f"listen {address!r} is not host:port; write e.g. 127.0.0.1:8086")
    return host.strip("[]"), int(port)


def _peer_host(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else "unknown peer"


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):  # a reset or an unclean TLS close ends the relay like an EOF
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()


class TlsFront:
    """Listens on a TCP address with mutual TLS and relays authenticated connections to ``upstream`` (a Unix
    socket path). Runs its own event loop on one thread; ``start`` and ``stop`` are called from any thread."""

    def __init__(self, context: ssl.SSLContext, upstream: Path, refusals: RefusalLog, *,
                 handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS, max_handshakes: int = MAX_HANDSHAKES) -> None:
        self._context = context
        self._upstream = upstream
        self.refusals = refusals
        self._timeout = handshake_timeout
        self._max_handshakes = max_handshakes
        self._handshaking = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="plugpool-tls", daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def handshaking(self) -> int:
        """Connections whose handshake is under way."""
        return self._handshaking

    def start(self, address: str) -> int:
        """Listen on ``address`` ("host:port"; port 0 picks one); returns the port. Raises ``OSError``."""
        host, port = split_address(address)
        self._thread.start()
        try:
            return asyncio.run_coroutine_threadsafe(self._listen(host, port), self._loop).result(_STOP_SECONDS)
        except BaseException:
            self._close_loop()
            raise

    async def _listen(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._handle, host, port, limit=_CHUNK)
        return int(self._server.sockets[0].getsockname()[1])

    def stop(self) -> None:
        """Stop listening and drop every connection (handshaking or relayed)."""
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(_STOP_SECONDS)
        self._close_loop()

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _close_loop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(_STOP_SECONDS)
        if not self._loop.is_running():
            self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if await self._handshake(writer):
                await self._relay(reader, writer)
        finally:
            writer.transport.abort()  # the relay is over or never began: no TLS close to wait for
            self._tasks.discard(task)

    async def _handshake(self, writer: asyncio.StreamWriter) -> bool:
        peer = _peer_host(writer)
        if self._handshaking >= self._max_handshakes:
            self.refusals.refused(peer, Refusal("too many handshakes", f"{self._max_handshakes} in progress"))
            return False
        self._handshaking += 1
        try:
            # asyncio's own timer aborts a stalled handshake; the outer bound also covers a peer that never reads
            async with asyncio.timeout(self._timeout + 1.0):
                await writer.start_tls(self._context, ssl_handshake_timeout=self._timeout)
        except (OSError, EOFError) as exc:  # ssl.SSLError and TimeoutError are OSErrors
            self.refusals.refused(peer, classify(exc))
            return False
        finally:
            self._handshaking -= 1
        log.debug("TLS client %s accepted", peer)
        return True

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(str(self._upstream), limit=_CHUNK)
        except OSError as exc:
            log.error("PPL021 cannot reach the gRPC server on %s (%s); the connection is dropped", self._upstream, exc)
            return
        pumps = [asyncio.ensure_future(_pump(reader, up_writer)), asyncio.ensure_future(_pump(up_reader, writer))]
        try:
            # either side closing ends the connection: HTTP/2 never half-closes
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # the upstream connection first: a stop that cancels this task while it waits for the pumps below
            # would skip whatever came after the wait (the connection leaked, found by a test's warning)
            up_writer.transport.abort()
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

