"""A server we spawned is taken as started only when its own socket listens on the port: another process that
took the port first is told apart, so nobody goes on talking to a stranger's server."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from sco.errors import PortTaken
from sco.stack import listeners, services

_BIND = ("import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
         "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('up', flush=True); time.sleep(60)")

pytestmark = pytest.mark.skipif(listeners.listening_inodes(1) is None, reason="needs Linux's /proc/net/tcp")


@pytest.fixture
def stranger() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Another process, in a session of its own, listening on a port."""
    port = services.free_port()
    proc = subprocess.Popen([sys.executable, "-c", _BIND, str(port)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    try:
        yield proc, port
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_the_listening_socket_is_found_held_by_its_own_process_and_not_by_another(
        stranger: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = stranger
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert listeners.listening_inodes(port)
        assert listeners.held_by_session(port, proc.pid) is True
        assert listeners.held_by_session(port, other.pid) is False
    finally:
        other.kill()
        other.wait()


def test_nothing_listening_is_held_by_nobody() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]           # bound, not listening
        assert listeners.listening_inodes(port) == set()
        assert listeners.held_by_session(port, 1) is False


def test_a_server_that_finds_its_port_taken_is_reported_as_such_not_as_started(
        stranger: tuple[subprocess.Popen[str], int]) -> None:
    _, port = stranger
    ours = subprocess.Popen([sys.executable, "-c", _BIND.replace("SO_REUSEADDR, 1", "SO_REUSEADDR, 0"), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with pytest.raises(PortTaken, match=f"127.0.0.1:{port} is held by another process"):
            services.wait_port(port, 30.0, ours, "our server")  # type: ignore[arg-type]
    finally:
        ours.kill()
        ours.wait()


def test_a_server_that_binds_its_port_is_taken_as_started() -> None:
    port = services.free_port()
    ours = subprocess.Popen([sys.executable, "-c", _BIND, str(port)], stdout=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        services.wait_port(port, 30.0, ours, "our server")  # type: ignore[arg-type]
        assert ours.poll() is None
    finally:
        ours.kill()
        ours.wait()
