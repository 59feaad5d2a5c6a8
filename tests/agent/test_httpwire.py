"""The agent's own minimal HTTP client: Content-Length, chunked and read-to-close responses, errors."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from agent.httpwire import HttpError, request
from testkit.httpraw import read_request


@pytest.fixture
def raw_server() -> Iterator[tuple[str, list[bytes], list[bytes]]]:
    """Answers each connection with the next canned response; records what it received."""
    responses: list[bytes] = []
    received: list[bytes] = []
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                request = read_request(conn)
                if request is None:
                    continue
                received.append(request)
                conn.sendall(responses.pop(0))

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}", responses, received
    srv.close()


def test_content_length_chunked_and_read_to_close_bodies_are_read_whole(
        raw_server: tuple[str, list[bytes], list[bytes]]) -> None:
    url, responses, received = raw_server
    responses += [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                  b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"4\r\nwiki\r\n6;x=y\r\npedia!\r\n0\r\n\r\n",
                  b"HTTP/1.0 429 Too Many Requests\r\n\r\nslow down"]
    assert request("GET", url + "/a?b=c") == (200, b"hello")
    assert request("POST", url + "/p", b'{"k":1}', {"Content-Type": "application/json"}) == (201, b"wikipedia!")
    assert request("GET", url + "/z") == (429, b"slow down")
    assert received[0].startswith(b"GET /a?b=c HTTP/1.1\r\n") and b"Connection: close" in received[0]
    assert received[1].endswith(b'\r\n\r\n{"k":1}') and b"Content-Length: 7" in received[1]


def test_an_unreachable_server_or_a_non_http_answer_is_an_oserror(
        raw_server: tuple[str, list[bytes], list[bytes]]) -> None:
    url, responses, _ = raw_server
    responses.append(b"SSH-2.0-OpenSSH\r\n\r\n")
    with pytest.raises(HttpError, match="not an HTTP response"):
        request("GET", url)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(OSError):
        request("GET", f"http://127.0.0.1:{port}/", timeout=1)
    with pytest.raises(HttpError, match="unsupported URL"):
        request("GET", "ftp://x/")
