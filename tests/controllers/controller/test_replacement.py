"""The controller's run loop (controllers/controller/replacement.py) across a PostgreSQL failover: a pass that
loses its database fails cleanly with the stable code PG001, the process goes on, and the next pass runs."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg
import pytest

from controllers.controller.replacement import run
from controllers.controller.settings import PassReport


class _Flaky:
    """A controller double whose second pass loses PostgreSQL (as a failover does) and third hits a bug."""

    def __init__(self) -> None:
        self.passes = 0
        self.s: Any = None

    def step(self) -> PassReport:
        self.passes += 1
        if self.passes == 2:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        if self.passes == 3:
            raise KeyError("a bug")
        return PassReport(leader=True, launched=self.passes)


def test_a_pass_that_loses_postgres_logs_pg001_and_the_next_passes_run(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="controllers.controller.replacement")
    ctl, reports = _Flaky(), []
    stop = asyncio.Event()

    def on_pass(report: PassReport) -> None:
        reports.append(report.launched)
        if len(reports) == 2:
            stop.set()

    asyncio.run(run(ctl, None, interval_s=0.01, stop=stop, on_pass=on_pass))  # type: ignore[arg-type]
    assert reports == [1, 4]
    assert [r.getMessage().split()[0] for r in caplog.records] == ["PG001", "CTL001"]
