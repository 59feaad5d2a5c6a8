"""One embedded stack per session for the analytics tests: the ClickHouse HTTP front end over chDB and
PostgreSQL; ``materialised`` adds the simulated pool history (``controllers.simregion.history``, what
``sco sim history`` writes) and the worked example's day, and materialises every asset once. Fixtures only:
what the tests share lives in ``helpers``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from .helpers import Stack, load_history, load_worked_example, materialise_everything


@pytest.fixture(scope="session")
def definitions() -> Any:
    """The code location's ``Definitions``, built once per session (``dbt parse`` when the manifest is stale, then
    every domain): the tests that read it carry ``xdist_group("dagster-definitions")`` so one worker builds it."""
    from orchestration.definitions import build_definitions

    return build_definitions()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from stores.clickhouse import client
    from stores.migrate import migrate_clickhouse, migrate_postgres
    from stores.postgres import connect
    from testkit.clickhouse import ClickHouseProcess
    from testkit.postgres import PostgresProcess

    root = tmp_path_factory.mktemp("analytics")
    ch = ClickHouseProcess().start()
    try:
        pg = PostgresProcess().start()
    except Exception:
        ch.close()
        raise
    try:
        c = client(ch.url)
        migrate_clickhouse(c)
        c.close()
        with connect(pg.url, autocommit=True) as conn:
            migrate_postgres(conn)
        yield Stack(ch.url, pg.url, root)
    finally:
        ch.close()
        pg.close()


def _stores_in_environ(stack: Stack) -> Any:
    return mock.patch.dict(os.environ, {"SCO_CLICKHOUSE_URL": stack.clickhouse_url,
                                        "SCO_POSTGRES_URL": stack.postgres_url})


@pytest.fixture(autouse=True)
def _analytics_stores_for_this_test_only(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test on the analytics stack finds its stores in the environment, as the assets do in production; the
    variables go when the test ends, so a later test in the same worker (a stack of its own, read through
    ``load_urls``, which puts the environment first) never meets this session's ClickHouse."""
    if "stack" not in request.fixturenames:
        yield
        return
    with _stores_in_environ(request.getfixturevalue("stack")):
        yield


@pytest.fixture(scope="session")
def materialised(stack: Stack) -> Stack:
    """History + worked example loaded, every asset materialised once (the order the schedules keep)."""
    with _stores_in_environ(stack):
        stack.history = load_history(stack)
        load_worked_example(stack)
        stack.results = materialise_everything(stack)
    return stack
