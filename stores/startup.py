"""What the ``sco-ingest`` process does about its own start-up: a restart is down for that long.

Measured under load 22-25 on 2 cores: ``import stores.ingest, nats, clickhouse_connect`` plus pandas (which
clickhouse-connect imported on the first Native insert) took 11-15 s of wall time and ~2 s of CPU; without
pydantic (imported only for a non-canonical payload, ``stores.eventrows``), pandas (the ingest inserts
``JSONCompactColumns`` with ``raw_insert``) and aiohttp (below), 3-4 s and ~0.6 s. The log line with
:func:`process_age` shows what a restart spent before its first pull.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

from .config import resolve_url

__all__ = ["clickhouse_client", "close_client", "process_age", "skip_websocket_transport"]

log = logging.getLogger("stores.ingest")


def process_age() -> str:
    """How long ago this process started, from ``/proc`` (a restart's start-up time, for the log)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return f"{uptime - ticks / os.sysconf('SC_CLK_TCK'):.2f} s"
    except (OSError, ValueError, IndexError):
        return "an unknown time"


def skip_websocket_transport(nats_url: str | None) -> None:
    """Keep nats-py from importing aiohttp (its WebSocket transport) when the URL is not ``ws(s)://``.

    nats-py imports aiohttp eagerly and does without it when it is missing; aiohttp was two thirds of the
    import time of ``import nats``. Only for the ``sco-ingest`` process (``stores.ingest.main``), whose one
    NATS connection is known: a library import of ``stores.ingest`` is left alone.
    """
    try:
        url = resolve_url("nats", nats_url, component="ingest")
    except Exception:
        return  # ``run`` reports a missing URL properly
    if "ws://" not in url and "wss://" not in url and "aiohttp" not in sys.modules:
        sys.modules["aiohttp"] = None  # type: ignore[assignment]  # ``import aiohttp`` now raises ImportError


async def clickhouse_client(clickhouse_url: str | None) -> Any:
    """A clickhouse-connect client, waiting for ClickHouse when it is down at start (do not exit)."""
    from clickhouse_connect.driver.exceptions import OperationalError

    from .clickhouse import client as ch_client

    url = resolve_url("clickhouse", clickhouse_url, component="ingest")  # the ingest's own user from the stack
    while True:
        try:
            return await asyncio.to_thread(ch_client, url)
        except OperationalError as exc:
            log.warning("ingest: ClickHouse unreachable (%s); retrying", exc)
            await asyncio.sleep(1.0)


async def close_client(pending: asyncio.Future[Any]) -> None:
    """Close the ClickHouse client, or stop waiting for it (NATS failed first)."""
    if not pending.done():
        pending.cancel()
        with contextlib.suppress(BaseException):
            await pending
        return
    if not pending.cancelled() and pending.exception() is None:
        pending.result().close()
