"""The replay's five-minute ranking: the production scorer (``orchestration.scoring.rank_pools`` on ``PoolInputs``
built as ``orchestration.rankings.gather_inputs`` builds them) and the reclaim forecast beside it
(``sco.commands.forecast_feed``), as the rows ``publish_in_force`` writes.

A ranking is computed from the region at ``t`` and put in force a little later (``through_controller.RANK_LATENCY``:
the ranking asset's run stands between its inputs and its rows). ``RankingWorker`` computes it in a process of its
own meanwhile — the replay's second core, as the asset is another process in production — and hands the rows back
to be published on the replay's connection before the pass that puts them in force; ``production_ranker`` computes
the same rows in the replaying process. Both read the exclusions at ``t`` on the replay's connection, so both put
the same rows in force at the same pass (``tests/sco/commands/test_replay_ranking.py``).
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from functools import partial
from typing import Any

from contracts.schema import Contract
from controllers.planning.model import Strategy, reads_forecast
from controllers.replay.through_controller import PoolFeed, Ranker

__all__ = ["RankingComputer", "RankingWorker", "contract_horizons", "contract_ranker", "forecast_horizons",
           "forecast_note", "one_native_thread", "production_ranker", "ranking_worker"]

WINDOW_DAYS = 30   # the production ranking window (gather_inputs)
Rows = list[tuple[object, ...]]


class _Pg:
    """``orchestration.store.Postgres``'s one method the publisher uses, on the replay's connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @contextmanager
    def connection(self) -> Iterator[Any]:
        yield self.conn


class RankingComputer:
    """What the ranking asset computes from one rate card's feeds: the scored pools and, with ``horizons_min``,
    each pool's reclaim forecast (its model fitted on the warm-up's feeds and refitted daily), as
    ``rankings_in_force`` rows."""

    def __init__(self, region: str, horizons_min: Sequence[int] | None = None) -> None:
        from .forecast_feed import ReplayForecaster

        self.region = region
        self.forecaster = ReplayForecaster(horizons_min) if horizons_min else None

    def rows(self, now: datetime, feeds: Sequence[PoolFeed], full: Mapping[str, datetime]) -> Rows:
        """The ranking in force from these feeds; ``full``: the pools excluded because launches were refused,
        since when (no depth until a card taken after the refusals shows room)."""
        from contracts.scoring import full_pool_share
        from orchestration.rankings import forward_share, in_force_rows
        from orchestration.scoring import PoolInputs, interruption_stats, rank_pools

        stats = interruption_stats({f.pool: f.reclaims for f in feeds}, {f.pool: f.instance_hours for f in feeds},
                                   WINDOW_DAYS * 24.0)
        inputs = [PoolInputs(pool=f.pool, rate_eur_h=f.rate_eur_h, guaranteed_rate_eur_h=f.guaranteed_rate_eur_h,
                             interruption_rate_pct_h=stats.get(f.pool, (0.0, None))[0],
                             mean_time_between_h=stats.get(f.pool, (0.0, None))[1],
                             forward_share=full_pool_share(forward_share(f.free, f.capacity, f.forward_free),
                                                           full_since=full.get(f.pool), card_at=f.card_at,
                                                           free_now=f.free),
                             reclaims=f.reclaims, instance_hours=f.instance_hours) for f in feeds]
        forecast = self.forecaster.forecast(now, feeds) if self.forecaster is not None else None
        return in_force_rows(self.region, now, rank_pools(inputs), forecast)

    def warm(self, history: Sequence[tuple[datetime, Sequence[PoolFeed]]]) -> None:
        """The warm-up's feeds, one list per rate card, for the forecast's first fit."""
        if self.forecaster is not None:
            self.forecaster.warm(history)

    def note(self) -> str:
        """One line on the forecast published: its horizons and last model, or why none was fitted."""
        f = self.forecaster
        if f is None:
            return "ranking: the production scorer, no reclaim forecast"
        horizons = "/".join(str(h) for h in f.horizons)
        if f.model is None:
            return (f"ranking: the production scorer; its reclaim forecast ({horizons} min) was never fitted: "
                    f"{f.fit_error or 'no rate card yet'}")
        return (f"ranking: the production scorer with the reclaim forecast at {horizons} min, refitted daily "
                f"(last model {f.model.version}, fitted on {f.model.samples:,} samples)")


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


def _full(pg: _Pg, region: str, now: datetime) -> dict[str, datetime]:
    from orchestration.rankings import excluded_pools, full_since

    return full_since(excluded_pools(pg, region, now))


def _publish(pg: _Pg, region: str, rows: Rows) -> None:
    from orchestration.rankings import IN_FORCE_COLUMNS
    from orchestration.store import replace_in_force

    replace_in_force(pg, "rankings_in_force", region, IN_FORCE_COLUMNS, rows)


class _InProcess:
    """A ``Ranker`` computing in the replaying process."""

    def __init__(self, conn: Any, computer: RankingComputer) -> None:
        self.pg, self.computer = _Pg(conn), computer
        # the replay keeps the warm-up's feeds only for a ranker with a ``warm`` (its cache key says so too)
        self.warm = computer.warm if computer.forecaster is not None else None

    def __call__(self, now: datetime, feeds: Sequence[PoolFeed]) -> Callable[[], None]:
        rows = self.computer.rows(now, feeds, _full(self.pg, self.computer.region, now))
        return partial(_publish, self.pg, self.computer.region, rows)

    def note(self) -> str:
        """``RankingComputer.note``."""
        return self.computer.note()


def production_ranker(conn: Any, region: str, horizons_min: Sequence[int] | None = None) -> Ranker:
    """The five-minute ranking of ``orchestration.rankings`` on the region's feeds, computed in this process and
    published to PostgreSQL on ``conn`` when the replay puts it in force; with ``horizons_min`` (None: no
    forecast), each pool's reclaim forecast beside the score."""
    return _InProcess(conn, RankingComputer(region, horizons_min))


def contract_horizons(contracts: Sequence[Contract]) -> tuple[int, ...]:
    """The forecast's horizons the contracts declare (one hour and the longest checkpoint interval)."""
    from orchestration.forecast.model import horizons_for

    return tuple(horizons_for([c.checkpoint_interval_min for c in contracts]))


def forecast_horizons(contracts: Sequence[Contract], strategy: Strategy | None) -> tuple[int, ...] | None:
    """The horizons the replay forecasts at for a planner run with ``strategy``: the contracts'
    (``contract_horizons``) when the planner reads the forecast; None when it cannot (the baselines weigh nothing
    by it, so their decisions are the same without it and a third of a month's replay — the forecast's features,
    predictions and daily refits — is spared)."""
    return contract_horizons(contracts) if reads_forecast(strategy) else None


def contract_ranker(conn: Any, region: str, contracts: Sequence[Contract], strategy: Strategy | None = None
                    ) -> Ranker:
    """``production_ranker`` with the reclaim forecast at the horizons ``contracts`` declare, as the ranking asset
    publishes it, when the planner's ``strategy`` reads it (``forecast_horizons``)."""
    return production_ranker(conn, region, forecast_horizons(contracts, strategy))


def forecast_note(ranker: Ranker) -> str:
    """One line on the forecast ``ranker`` published: its horizons and last model, or why none was fitted."""
    note = getattr(ranker, "note", None)
    return str(note()) if note is not None else "ranking: the production scorer, no reclaim forecast"


def _serve(pipe: Any, region: str, horizons_min: Sequence[int] | None) -> None:
    """The worker's loop: one answer per request, in order; an error's traceback is the answer."""
    with one_native_thread():
        computer = RankingComputer(region, horizons_min)
        while True:
            try:
                request = pipe.recv()
            except EOFError:   # the replay is gone
                return
            kind = request[0]
            if kind == "stop":
                return
            try:
                if kind == "rows":
                    answer: Any = computer.rows(*request[1:])
                elif kind == "warm":
                    computer.warm(request[1])
                    answer = None
                elif kind == "note":
                    answer = computer.note()
                else:
                    answer = time.process_time()
                pipe.send(("ok", answer))
            except Exception:   # handed to the replay, which raises it
                pipe.send(("error", traceback.format_exc()))


class RankingWorker:
    """A ``Ranker`` whose rankings are computed in a process of its own (spawned: the replaying process holds
    native thread pools a fork would copy half-way) while the replay runs its passes; the rows come back when the
    replay puts them in force, and are published on the replay's connection then. ``close()`` stops it."""

    def __init__(self, conn: Any, region: str, horizons_min: Sequence[int] | None = None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.pg, self.region = _Pg(conn), region
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, region, tuple(horizons_min or ())),
                                 name="sco-ranking", daemon=True)
        self._proc.start()
        child.close()   # this end's copy: the worker's death then reads as EOF here, not as a hang
        self._sent = self._received = 0
        self._answers: dict[int, Any] = {}
        self._unread: set[int] = set()   # requests whose answer nobody reads (the warm-up's: nothing)
        self.warm = self._warm if horizons_min else None

    def _ask(self, *request: Any) -> int:
        """Send ``request``; its number (answers come in the order asked)."""
        try:
            self._pipe.send(request)
        except OSError:   # a broken pipe: the worker is gone
            raise RuntimeError(f"the ranking worker ended before it was asked {request[0]!r} (exit code "
                               f"{self._proc.exitcode}; its error is on stderr above)") from None
        self._sent += 1
        return self._sent

    def _answer(self, number: int) -> Any:
        """The answer to request ``number``, reading (and keeping) the answers before it."""
        while number not in self._answers:
            try:
                status, value = self._pipe.recv()
            except (EOFError, OSError):
                raise RuntimeError(f"the ranking worker ended without an answer (exit code {self._proc.exitcode})"
                                   ) from None
            self._received += 1   # counted before an error is raised: the answers after it keep their numbers
            if status != "ok":
                self._unread.discard(self._received)
                raise RuntimeError(f"the ranking worker failed:\n{value}")
            if self._received not in self._unread:
                self._answers[self._received] = value
            self._unread.discard(self._received)
        return self._answers.pop(number)

    def _warm(self, history: Sequence[tuple[datetime, Sequence[PoolFeed]]]) -> None:
        self._unread.add(self._ask("warm", list(history)))   # its answer (nothing) is read before the first rows

    def __call__(self, now: datetime, feeds: Sequence[PoolFeed]) -> Callable[[], None]:
        number = self._ask("rows", now, list(feeds), _full(self.pg, self.region, now))

        def publish() -> None:
            _publish(self.pg, self.region, self._answer(number))
        return publish

    def note(self) -> str:
        """``RankingComputer.note``, asked of the worker."""
        return str(self._answer(self._ask("note")))

    def cpu_s(self) -> float:
        """The worker's CPU seconds so far."""
        return float(self._answer(self._ask("cpu")))

    def close(self) -> None:
        """Stop the worker (unanswered requests are dropped)."""
        with suppress(OSError, ValueError):   # the worker is gone already
            self._pipe.send(("stop",))
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        self._pipe.close()


@contextmanager
def ranking_worker(conn: Any, region: str, contracts: Sequence[Contract], strategy: Strategy | None = None
                   ) -> Iterator[RankingWorker]:
    """``contract_ranker``'s rankings computed by a ``RankingWorker``, stopped on the way out."""
    worker = RankingWorker(conn, region, forecast_horizons(contracts, strategy))
    try:
        yield worker
    finally:
        worker.close()
