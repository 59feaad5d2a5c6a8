from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.helpers import NatsServer, ensure_stream


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path / "nats")
    server.start()
    asyncio.run(ensure_stream(server.url))
    try:
        yield server
    finally:
        server.stop()
