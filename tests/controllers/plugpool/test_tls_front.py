"""The TLS front: it relays an authenticated client's bytes to the Unix socket behind it, and refuses every other
client at the handshake with a PPL020 line and a count, within a bounded time and a bounded number at once."""

from __future__ import annotations

import logging
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controllers.plugpool.tls_front import TlsFront, server_context
from controllers.plugpool.tls_refusals import RefusalLog
from tests.controllers.plugpool.certs import ManualClock, Pki, make_pki

TIMEOUT = 0.5   # the handshake timeout under test (production: 10 s)


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@dataclass
class Front:
    front: TlsFront
    port: int
    pki: Pki
    clock: ManualClock

    def client(self, cert: bytes | None, key: bytes | None = None, name: str = "client") -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.pki.ca.cert.decode())
        context.set_alpn_protocols(["h2"])
        if cert is not None and key is not None:
            context.load_cert_chain(*self.pki.client_files(self.pki.client if cert == self.pki.client.cert
                                                           else self.pki.rogue, name))
        return context

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)


@pytest.fixture
def make_front(tmp_path: Path) -> Iterator[Callable[..., Front]]:
    started: list[tuple[TlsFront, socketserver.ThreadingUnixStreamServer]] = []
    pki = make_pki(tmp_path)

    def make(max_handshakes: int = 64, handshake_timeout: float = TIMEOUT) -> Front:
        sock = tmp_path / "up.sock"
        upstream = socketserver.ThreadingUnixStreamServer(str(sock), _Echo)
        upstream.daemon_threads = True
        threading.Thread(target=upstream.serve_forever, args=(0.05,), daemon=True).start()
        clock = ManualClock()
        front = TlsFront(server_context(pki.tls), sock, RefusalLog(clock), handshake_timeout=handshake_timeout,
                         max_handshakes=max_handshakes)
        started.append((front, upstream))
        return Front(front, front.start("127.0.0.1:0"), pki, clock)

    yield make
    for front, upstream in started:
        front.stop()
        upstream.shutdown()
        upstream.server_close()


def _wait_for(reason: str, front: TlsFront) -> None:
    deadline = time.monotonic() + 10
    while reason not in front.refusals.counts():
        assert time.monotonic() < deadline, f"no refusal {reason!r}; got {front.refusals.counts()}"
        time.sleep(0.02)


def _ppl020(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("PPL020")
            and r.levelno == logging.WARNING]


def test_an_authenticated_client_is_relayed_to_the_socket_behind_with_h2(make_front: Callable[..., Front]) -> None:
    f = make_front()
    context = f.client(f.pki.client.cert, f.pki.client.key)
    with f.connect() as raw, context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.selected_alpn_protocol() == "h2"
        tls.sendall(b"PRI * HTTP/2.0")
        assert tls.recv(100) == b"PRI * HTTP/2.0"
    assert f.front.refusals.counts() == {}


@pytest.mark.parametrize(("who", "reason"), [("none", "no certificate"), ("rogue", "unknown CA")])
def test_a_client_without_a_certificate_of_the_ca_is_refused_logged_and_counted(
        make_front: Callable[..., Front], caplog: pytest.LogCaptureFixture, who: str, reason: str) -> None:
    f = make_front()
    context = f.client(None) if who == "none" else f.client(f.pki.rogue.cert, f.pki.rogue.key, "rogue")
    with f.connect() as raw:
        try:  # TLS 1.3: the client may learn of the refusal only at its first read (an alert, a reset or EOF)
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"PRI * HTTP/2.0")
                answer = tls.recv(100)
        except (ssl.SSLError, ConnectionError):
            answer = b""
    assert answer == b""   # nothing was relayed
    _wait_for(reason, f.front)
    assert f.front.refusals.counts() == {reason: 1}
    assert _ppl020(caplog) == [f"PPL020 refused TLS handshake from 127.0.0.1: {reason} "
                               f"({_detail(reason)})"]


def _detail(reason: str) -> str:
    return {"no certificate": "PEER_DID_NOT_RETURN_A_CERTIFICATE",
            "unknown CA": "unable to get local issuer certificate"}[reason]


def test_a_plaintext_client_is_refused_as_not_tls(make_front: Callable[..., Front]) -> None:
    f = make_front()
    with f.connect() as raw:
        raw.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        _wait_for("not TLS", f.front)


def test_a_connection_that_sends_nothing_is_closed_after_the_handshake_timeout(
        make_front: Callable[..., Front], caplog: pytest.LogCaptureFixture) -> None:
    f = make_front()
    began = time.monotonic()   # before the connect: the front's clock starts at its accept, after this
    with f.connect() as raw:
        with pytest.raises(ConnectionResetError):
            assert raw.recv(1) == b""   # the front aborts (RST); a plain close would read as EOF
            raise ConnectionResetError
        waited = time.monotonic() - began
    assert TIMEOUT <= waited < TIMEOUT + 5
    _wait_for("handshake timeout", f.front)   # asyncio drops the connection before it tells the front
    assert f.front.refusals.counts() == {"handshake timeout": 1}
    assert _ppl020(caplog)[0].startswith("PPL020 refused TLS handshake from 127.0.0.1: handshake timeout")


def test_connections_beyond_the_cap_of_handshakes_in_progress_are_closed_at_once(
        make_front: Callable[..., Front]) -> None:
    # the two silent handshakes must still be in progress when the third comes, however loaded the machine: a
    # handshake timeout far beyond the "at once" bound below
    f = make_front(max_handshakes=2, handshake_timeout=60.0)
    silent = [f.connect(), f.connect()]
    deadline = time.monotonic() + 10
    while f.front.handshaking < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with f.connect() as third:
        began = time.monotonic()
        with pytest.raises(ConnectionResetError):
            assert third.recv(1) == b""
            raise ConnectionResetError
        assert time.monotonic() - began < 20   # at once: not after the 60 s handshake timeout
    _wait_for("too many handshakes", f.front)
    assert f.front.refusals.counts() == {"too many handshakes": 1}
    for sock in silent:
        sock.close()
    _wait_for("closed during handshake", f.front)
    context = f.client(f.pki.client.cert, f.pki.client.key)
    with f.connect() as raw, context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"x")
        assert tls.recv(1) == b"x"
