"""Finding: 256 connections each sending a header line every 10 s held the front end (its 30 s timeout was per
read). Now the request line and headers, and then the body, each have a total deadline (``CHS009`` when a
connection is cut), and connections that have not authenticated are capped, the oldest cut for a newcomer
(``CHS010``): drip-feeding clients neither outlive their deadline nor keep a real client out."""

from __future__ import annotations

import logging
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from tests.sco.stack.frontend_helpers import TestFrontend, running_frontend
from tests.stores.helpers import http

pytestmark = pytest.mark.services


def _address(server: TestFrontend) -> tuple[str, int]:
    parts = urlsplit(server.plain_url)
    return parts.hostname or "127.0.0.1", int(parts.port or 0)


def _drip(server: TestFrontend, head: bytes, lines: list[bytes], every_s: float, stop: threading.Event,
          ) -> tuple[float, bytes]:
    """Send ``head``, then one of ``lines`` every ``every_s`` until the server cuts the connection: (seconds it
    lived, what the server sent)."""
    started = time.monotonic()
    with socket.create_connection(_address(server), timeout=30) as sock:
        sock.sendall(head)
        for line in lines:
            if stop.wait(every_s):
                break
            try:
                sock.sendall(line)
            except OSError:
                break
        sock.settimeout(5)
        try:
            answer = sock.recv(65536)
        except OSError:
            answer = b""
    return time.monotonic() - started, answer


def _security_lines(caplog: pytest.LogCaptureFixture, code: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "sco.clickhouse.security"
            and r.getMessage().startswith(code)]


def test_a_client_dripping_header_lines_is_cut_at_the_headers_total_deadline(caplog: pytest.LogCaptureFixture,
                                                                              ) -> None:
    lines = [b"X-Drip-%d: x\r\n" % i for i in range(100)]
    with running_frontend(header_timeout_s=1.0, read_timeout_s=10.0) as server, \
            caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
        lived, _ = _drip(server, b"POST / HTTP/1.1\r\nHost: x\r\n", lines, 0.2, threading.Event())
    assert 0.9 <= lived < 5.0, lived  # per read it would live 100 x 0.2 s = 20 s
    cut = _security_lines(caplog, "CHS009")
    assert len(cut) == 1 and "line and headers" in cut[0] and "within 1 s" in cut[0], cut


def test_a_client_dripping_its_body_is_cut_at_the_body_total_deadline(caplog: pytest.LogCaptureFixture) -> None:
    with running_frontend(body_timeout_s=1.0, read_timeout_s=10.0) as server, \
            caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
        head = (b"POST /?query=SELECT%201 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nAuthorization: Basic "
                + _basic(server) + b"\r\n\r\n")
        lived, answer = _drip(server, head, [b"x" * 10] * 100, 0.2, threading.Event())
    assert 0.9 <= lived < 5.0 and b"1\n" not in answer.split(b"\r\n\r\n")[-1], (lived, answer)
    cut = _security_lines(caplog, "CHS009")
    assert len(cut) == 1 and " body " in cut[0], cut


def _basic(server: TestFrontend) -> bytes:
    import base64

    parts = urlsplit(server.url)
    return base64.b64encode(f"{parts.username}:{parts.password}".encode())


def test_unauthenticated_drippers_past_the_cap_make_room_and_a_real_client_is_served(
        caplog: pytest.LogCaptureFixture) -> None:
    stop = threading.Event()
    results: list[tuple[float, bytes]] = []
    lines = [b"X-Drip-%d: x\r\n" % i for i in range(300)]
    with running_frontend(max_unauthenticated=4, max_connections=16, header_timeout_s=60.0) as server, \
            caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
        threads = [threading.Thread(target=lambda: results.append(
            _drip(server, b"POST / HTTP/1.1\r\nHost: x\r\n", lines, 0.2, stop))) for _ in range(12)]
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        time.sleep(0.5)
        served = http(server.url + "/", b"SELECT 42")  # one more connection: an old dripper makes room
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert (served.status, served.body) == (200, b"42\n")
    assert len(_security_lines(caplog, "CHS010")) >= 12 + 1 - 4  # every dripper past the cap, and room for us
    assert sum(1 for lived, _ in results if lived < 2.5) >= 8  # the cut ones did not live out their drip
