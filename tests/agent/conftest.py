"""Fixtures for the agent tests: the shared NATS server with the events stream the agent publishes to."""

from __future__ import annotations

import asyncio

import pytest

from testkit.nats import NatsProcess
from tests.agent.helpers import ensure_stream


@pytest.fixture
def events_nats(nats_server: NatsProcess) -> NatsProcess:
    """The one ``nats_server`` fixture, with the SCO_EVENTS stream in place."""
    asyncio.run(ensure_stream(nats_server.url))
    return nats_server
