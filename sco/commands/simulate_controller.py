"""``sco simulate --engine controller``: the replay through the production controller (one code path).

Wires what the controllers layer cannot import: the production scorer (``orchestration.scoring.rank_pools`` on
``PoolInputs`` built the way ``orchestration.rankings.gather_inputs`` builds them, published with
``publish_in_force``, with the reclaim forecast beside it: ``sco.commands.forecast_feed``) and an embedded
PostgreSQL (``sco.stack.services.start_postgres``, one fresh migrated database per strategy run).
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queues
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from contracts.schema import Contract
from controllers.planning import Caps, Strategy
from controllers.replay import WorkloadOutcome
from controllers.replay.through_controller import PoolFeed, Ranker, replay_through_controller
from controllers.simregion.config import RegionConfig

__all__ = ["EmbeddedPostgres", "contract_ranker", "forecast_note", "one_native_thread", "production_ranker",
           "run_controller_engine", "run_in_processes"]

WINDOW_DAYS = 30   # the production ranking window (gather_inputs)


class _Pg:
    """``orchestration.store.Postgres``'s one method the publisher uses, on the replay's connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @contextmanager
    def connection(self) -> Iterator[Any]:
        yield self.conn


class _Ranker:
    """A ``Ranker`` whose forecaster is warmed with the replay's warm-up feeds."""

    def __init__(self, rank: Callable[[datetime, Sequence[PoolFeed]], None], forecaster: Any) -> None:
        self.rank, self.forecaster = rank, forecaster

    def __call__(self, now: datetime, feeds: Sequence[PoolFeed]) -> None:
        self.rank(now, feeds)

    def warm(self, history: Sequence[tuple[datetime, Sequence[PoolFeed]]]) -> None:
        self.forecaster.warm(history)


def production_ranker(conn: Any, region: str, horizons_min: Sequence[int] | None = None) -> Ranker:
    """The five-minute ranking of ``orchestration.rankings`` on the region's feeds, published to PostgreSQL; a pool
    excluded because launches were refused has no depth until a card taken after the refusals shows room. With
    ``horizons_min`` (None: no forecast), each pool's reclaim forecast (``sco.commands.forecast_feed``) is published
    beside the score, its model fitted on the warm-up's feeds and refitted daily."""
    from contracts.scoring import full_pool_share
    from orchestration.rankings import excluded_pools, forward_share, full_since, publish_in_force
    from orchestration.scoring import PoolInputs, interruption_stats, rank_pools

    from .forecast_feed import ReplayForecaster

    pg = _Pg(conn)
    forecaster = ReplayForecaster(horizons_min) if horizons_min else None

    def rank(now: datetime, feeds: Sequence[PoolFeed]) -> None:
        stats = interruption_stats({f.pool: f.reclaims for f in feeds}, {f.pool: f.instance_hours for f in feeds},
                                   WINDOW_DAYS * 24.0)
        full = full_since(excluded_pools(pg, region, now))
        inputs = [PoolInputs(pool=f.pool, rate_eur_h=f.rate_eur_h, guaranteed_rate_eur_h=f.guaranteed_rate_eur_h,
                             interruption_rate_pct_h=stats.get(f.pool, (0.0, None))[0],
                             mean_time_between_h=stats.get(f.pool, (0.0, None))[1],
                             forward_share=full_pool_share(forward_share(f.free, f.capacity, f.forward_free),
                                                           full_since=full.get(f.pool), card_at=f.card_at,
                                                           free_now=f.free),
                             reclaims=f.reclaims, instance_hours=f.instance_hours) for f in feeds]
        forecast = forecaster.forecast(now, feeds) if forecaster is not None else None
        publish_in_force(pg, region, now, rank_pools(inputs), forecast)
    return _Ranker(rank, forecaster) if forecaster is not None else rank


def contract_ranker(conn: Any, region: str, contracts: Sequence[Contract]) -> Ranker:
    """``production_ranker`` with the reclaim forecast at the horizons ``contracts`` declare (one hour and the
    longest checkpoint interval), as the ranking asset publishes it: what every replay of the production path
    ranks with."""
    from orchestration.forecast.model import horizons_for

    return production_ranker(conn, region, horizons_for([c.checkpoint_interval_min for c in contracts]))


def forecast_note(ranker: Ranker) -> str:
    """One line on the forecast ``ranker`` published: its horizons and last model, or why none was fitted."""
    forecaster = getattr(ranker, "forecaster", None)
    if forecaster is None:
        return "ranking: the production scorer, no reclaim forecast"
    horizons = "/".join(str(h) for h in forecaster.horizons)
    if forecaster.model is None:
        return (f"ranking: the production scorer; its reclaim forecast ({horizons} min) was never fitted: "
                f"{forecaster.fit_error or 'no rate card yet'}")
    return (f"ranking: the production scorer with the reclaim forecast at {horizons} min, refitted daily "
            f"(last model {forecaster.model.version}, fitted on {forecaster.model.samples:,} samples)")


@contextmanager
def one_native_thread() -> Iterator[None]:
    """One native thread (OpenMP, BLAS, polars) for what runs inside: the forecast's predictions are on one card's
    231 rows, where the other threads only spin-wait (a tenth of the replay's CPU on two cores, more under load),
    and replays run side by side anyway. Polars reads its pool's size once, when first imported: a process that
    has not imported it yet (``sco simulate``, the benches) gets one thread there too (its features on one card:
    13 ms of CPU a call instead of 21)."""
    import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime, so that the limit below reaches it)
    from threadpoolctl import threadpool_limits

    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    with threadpool_limits(limits=1):
        yield


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
                          cache: Path | None = None) -> dict[str, WorkloadOutcome]:
    """One strategy's replay through the controller on the migrated database at ``url`` (``diagnostics``: the
    controllers' events by kind; ``caps``: the planner's, ADR-06's unless a diagnostic lifts them; ``cache``: where
    the region after its warm-up is kept, None for ``disk_cache.cache_dir()``: ``SCO_REPLAY_CACHE=off`` turns it
    off)."""
    import psycopg

    from controllers.replay import disk_cache

    with one_native_thread(), psycopg.connect(url, autocommit=True) as conn:
        return replay_through_controller(config, start, days, {c.ref: c for c in contracts}, units, conn,
                                         strategy=strategy, warmup_days=warmup_days,
                                         ranker=contract_ranker(conn, config.region, contracts), progress=progress,
                                         diagnostics=diagnostics, caps=caps, cache=cache or disk_cache.cache_dir())


Outcomes = tuple[dict[str, WorkloadOutcome], dict[str, int]]


class Databases(Protocol):
    """Where each replay gets its fresh migrated database (``EmbeddedPostgres``)."""

    def database(self) -> str:
        """A fresh, migrated database; its URL."""


def _child(out: Any, name: str, url: str, config: RegionConfig, start: datetime, days: float,
           contracts: Sequence[Contract], units: Mapping[str, int], warmup_days: float) -> None:
    """One strategy's replay in its own process; progress, then the outcomes and diagnostics, on ``out``."""
    try:
        diagnostics: dict[str, int] = {}
        outcomes = run_controller_engine(url, config, start, days, contracts, units,
                                         None if name == "contract" else Strategy(name), warmup_days,
                                         lambda done: out.put(("progress", name, done)), diagnostics)
        out.put(("done", name, (outcomes, diagnostics)))
    except BaseException as exc:   # reported to the parent, which stops the others
        out.put(("error", name, f"{type(exc).__name__}: {exc}"))


def run_in_processes(pg: Databases, names: Sequence[str], jobs: int, config: RegionConfig, start: datetime,
                     days: float, contracts: Sequence[Contract], units: Mapping[str, int], warmup_days: float,
                     progress: Callable[[Mapping[str, float], float], None]) -> dict[str, Outcomes]:
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
                                                                 list(contracts), dict(units), warmup_days))
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
