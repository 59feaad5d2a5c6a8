"""``sco simulate --engine controller``: the replay through the production controller (one code path).

Wires what the controllers layer cannot import: the production ranking with its reclaim forecast
(``sco.commands.replay_ranking``, computed by a worker process beside the replay) and an embedded PostgreSQL
(``sco.stack.services.start_postgres``, one fresh migrated database per strategy run).
"""

from __future__ import annotations

import multiprocessing
import queue as queues
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from contracts.schema import Contract
from controllers.planning import Caps, Strategy
from controllers.replay import WorkloadOutcome
from controllers.replay.through_controller import Ranker, replay_through_controller
from controllers.simregion.config import RegionConfig

from .replay_ranking import contract_ranker, forecast_note, one_native_thread, production_ranker, ranking_worker

__all__ = ["EmbeddedPostgres", "contract_ranker", "forecast_note", "one_native_thread", "production_ranker",
           "ranking_worker", "run_controller_engine", "run_in_processes"]

class EmbeddedPostgres:
    """One embedded PostgreSQL (fsync, synchronous_commit and full_page_writes off: a replay's database is thrown
    away) with a fresh migrated database per ``database()``."""

    def __init__(self) -> None:
        from sco.stack import services

        self.dir = Path(tempfile.mkdtemp(prefix="sco-replay-pg-"))
        self.url = services.start_postgres(self.dir, fast=True).url

    def database(self) -> str:
        """A fresh, migrated database on the embedded server; its URL."""
        import psycopg

        from stores import migrate

        name = f"replay_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = self.url.rsplit("/", 1)[0] + f"/{name}"
        with psycopg.connect(url, autocommit=True) as conn:
            migrate.migrate_postgres(conn)
        return url

    def close(self) -> None:
        """Stop the embedded server and remove its directory."""
        from sco.stack import services

        services.stop_postgres(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_controller_engine(url: str, config: RegionConfig, start: datetime, days: float,
                          contracts: Sequence[Contract], units: Mapping[str, int], strategy: Strategy | None,
                          warmup_days: float = 7.0, progress: Callable[[float], None] | None = None,
                          diagnostics: dict[str, int] | None = None, caps: Caps | None = None,
                          cache: Path | None = None, rank_latency: timedelta = timedelta(0)
                          ) -> dict[str, WorkloadOutcome]:
    """One strategy's replay through the controller on the migrated database at ``url`` (``diagnostics``: the
    controllers' events by kind; ``caps``: the planner's, ADR-06's unless a diagnostic lifts them; ``cache``: where
    the region after its warm-up is kept, None for ``disk_cache.cache_dir()``: ``SCO_REPLAY_CACHE=off`` turns it
    off). ``rank_latency``: how long after its inputs a ranking is in force; with one, a worker process computes
    the rankings meanwhile (without, there is nothing to overlap and they are computed here)."""
    import psycopg

    from controllers.replay import disk_cache

    with one_native_thread(), psycopg.connect(url, autocommit=True) as conn, \
            _ranker(conn, config.region, contracts, rank_latency, strategy) as ranker:
        return replay_through_controller(config, start, days, {c.ref: c for c in contracts}, units, conn,
                                         strategy=strategy, warmup_days=warmup_days, ranker=ranker,
                                         progress=progress, diagnostics=diagnostics, caps=caps,
                                         cache=cache or disk_cache.cache_dir(), rank_latency=rank_latency)


def _ranker(conn: Any, region: str, contracts: Sequence[Contract], latency: timedelta, strategy: Strategy | None
            ) -> AbstractContextManager[Ranker]:
    if latency:
        return ranking_worker(conn, region, contracts, strategy)
    return nullcontext(contract_ranker(conn, region, contracts, strategy))


Outcomes = tuple[dict[str, WorkloadOutcome], dict[str, int]]


class Databases(Protocol):
    """Where each replay gets its fresh migrated database (``EmbeddedPostgres``)."""

    def database(self) -> str:
        """A fresh, migrated database; its URL."""


def _child(out: Any, name: str, url: str, config: RegionConfig, start: datetime, days: float,
           contracts: Sequence[Contract], units: Mapping[str, int], warmup_days: float,
           rank_latency: timedelta = timedelta(0)) -> None:
    """One strategy's replay in its own process; progress, then the outcomes and diagnostics, on ``out``."""
    try:
        diagnostics: dict[str, int] = {}
        outcomes = run_controller_engine(url, config, start, days, contracts, units,
                                         None if name == "contract" else Strategy(name), warmup_days,
                                         lambda done: out.put(("progress", name, done)), diagnostics,
                                         rank_latency=rank_latency)
        out.put(("done", name, (outcomes, diagnostics)))
    except BaseException as exc:   # reported to the parent, which stops the others
        out.put(("error", name, f"{type(exc).__name__}: {exc}"))


def run_in_processes(pg: Databases, names: Sequence[str], jobs: int, config: RegionConfig, start: datetime,
                     days: float, contracts: Sequence[Contract], units: Mapping[str, int], warmup_days: float,
                     progress: Callable[[Mapping[str, float], float], None],
                     rank_latency: timedelta = timedelta(0)) -> dict[str, Outcomes]:
    """The strategies ``names`` replayed through the controller in up to ``jobs`` processes at once, each on its
    own database of ``pg``; ``progress(done share per strategy, seconds)`` on every report. Raises RuntimeError
    when a replay fails (the others are stopped)."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    pending = list(names)
    running: dict[str, Any] = {}
    done: dict[str, Outcomes] = {}
    shares = {n: 0.0 for n in names}
    began = time.monotonic()
    try:
        while pending or running:
            while pending and len(running) < max(1, jobs):
                name = pending.pop(0)
                running[name] = ctx.Process(target=_child, args=(out, name, pg.database(), config, start, days,
                                                                 list(contracts), dict(units), warmup_days,
                                                                 rank_latency))
                running[name].start()
            try:
                kind, name, payload = out.get(timeout=5)
            except queues.Empty:
                dead = [n for n, p in running.items() if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"the replay of {dead[0]} ended without a result") from None
                continue
            if kind == "error":
                raise RuntimeError(f"the replay of {name} failed: {payload}")
            if kind == "done":
                done[name] = payload
                running.pop(name).join()
                shares[name] = 1.0
            else:
                shares[name] = float(payload)
            progress(shares, time.monotonic() - began)
    finally:
        for p in running.values():
            p.terminate()
            p.join()
    return done
