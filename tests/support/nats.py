"""The NATS fixtures (registered in tests/conftest.py): a server per test, a three-member cluster; the
processes themselves are ``testkit.nats`` (benches use them too).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.nats import NatsCluster, NatsProcess

__all__ = ["nats_cluster", "nats_server", "nats_url"]


@pytest.fixture
def nats_cluster() -> Iterator[NatsCluster]:
    cluster = NatsCluster().start()
    yield cluster
    cluster.close()


@pytest.fixture
def nats_server() -> Iterator[NatsProcess]:
    server = NatsProcess().start()
    yield server
    server.close()


@pytest.fixture
def nats_url(nats_server: NatsProcess) -> str:
    return nats_server.url
