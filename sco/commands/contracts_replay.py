"""The 30-day replay attached to ``sco contracts report`` (ADR-03): each workload's expected interruptions,
wasted work, fallback frequency and net saving over the last N days of pool history in ClickHouse.

A thin layer over the public names of ``controllers.replay``: ``read_trace`` reads the region's history (the
catalogue ``provider_pools``, the reclaim waves from ``events``, the five-minute ``rate_cards`` — what the
provider feed writes live and ``sco sim history`` writes for the simulated region) into a ``Trace``;
``replay_contracts_through_controller`` (the default engine) sizes the claims and replays the trace through the
production controller over a ``TraceRegion`` on an embedded PostgreSQL; ``replay_contracts`` runs the replay-only
model instead (``--replay-engine model``); ``render_replay`` prints the table with the engine's approximations. A
missing history is the stable error ``RPL001`` naming the fix; never a traceback.

How history becomes a trace (stated in the output): a wave is the notices and no-notice losses of one pool at one
instant, its share the victims over the pool's live instances on the last rate card; what a pool can lend is the
most it had free on any card (committed and guaranteed pools: their slots); free room, rates and utilisation
follow the rate cards; the history has no forward-capacity calendar, so the replay's scorer uses the current free
share.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.pools import Pool, PurchaseModel
from contracts.schema import Contract
from controllers.replay import Reclaim, ReplayConfig, Trace, WorkloadOutcome, replay, size_claims

from ..errors import CliError
from .report import render_table

__all__ = ["ReplayWindow", "read_trace", "render_replay", "replay_contracts", "replay_contracts_through_controller",
           "trace_from_rows"]

HOLD = timedelta(hours=1)   # how long a wave's capacity counts as taken where no rate card says otherwise
_POOLS = ("SELECT pool, region, hall, aggregate, sku_family, size, vcpu, memory_gib, gpu, purchase_model, "
          "business_unit, rate_eur_h, guaranteed_rate_eur_h, slots FROM provider_pools FINAL "
          "WHERE region = {region:String} ORDER BY pool")
_WAVES = ("SELECT time, pool, uniqExact(event_id), uniqExactIf(event_id, kind = 'no-notice-loss') "
          "FROM events WHERE region = {region:String} AND kind IN ('notice', 'no-notice-loss') AND NOT drill "
          "AND time >= {since:DateTime64(3, 'UTC')} AND time < {until:DateTime64(3, 'UTC')} "
          "GROUP BY time, pool ORDER BY time, pool")
_CARDS = ("SELECT time, groupArray(pool), groupArray(rate_eur_h), groupArray(free_instances), "
          "groupArray(instances) FROM rate_cards FINAL WHERE region = {region:String} "
          "AND time >= {since:DateTime64(3, 'UTC')} AND time < {until:DateTime64(3, 'UTC')} "
          "GROUP BY time ORDER BY time")


@dataclass(frozen=True)
class ReplayWindow:
    region: str = "r1"
    days: float = 30.0
    warmup_days: float = 7.0     # history before the window the rankings learn from
    end: datetime | None = None  # default: the newest rate card in the history


def _no_history(region: str, what: str) -> CliError:
    return CliError(f"RPL001: {what} for region {region!r} in ClickHouse, so there is nothing to replay; load the "
                    "pool history (simulated region: `sco sim history --days 37`; production: the provider feed "
                    "and ingest), point --clickhouse at the store that has it, or pass --no-replay")


def read_trace(client: Any, window: ReplayWindow) -> Trace:
    """The region's last ``window.days`` of history (after ``warmup_days``) as a replay trace."""
    region = {"region": window.region}
    pools = client.query(_POOLS, parameters=region).result_rows
    if not pools:
        raise _no_history(window.region, "no pool catalogue (provider_pools)")
    end = window.end
    if end is None:
        newest = client.query("SELECT max(time), count() FROM rate_cards WHERE region = {region:String}",
                              parameters=region).result_rows[0]
        if not newest[1]:
            raise _no_history(window.region, "no rate cards (rate_cards)")
        end = newest[0] if newest[0].tzinfo else newest[0].replace(tzinfo=UTC)
    start = end - timedelta(days=window.days)
    span = {**region, "since": start - timedelta(days=window.warmup_days), "until": end}
    waves = client.query(_WAVES, parameters=span).result_rows
    cards = client.query(_CARDS, parameters=span).result_rows
    if not cards:
        raise _no_history(window.region, f"no rate cards between {span['since']:%Y-%m-%d} and {end:%Y-%m-%d}")
    return trace_from_rows(pools, waves, cards, start, end, timedelta(days=window.warmup_days))


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _pool(row: Sequence[Any]) -> Pool:
    pid, region, hall, aggregate, family, size, vcpu, mem, gpu, model, bu, rate, guaranteed, _ = row
    return Pool(pool_id=pid, region=region, hall=hall, aggregate=aggregate, sku_family=family, size=size,
                vcpu=int(vcpu), memory_gib=int(mem), gpu=int(gpu), purchase_model=PurchaseModel(model),
                rate_eur_h=Decimal(rate), guaranteed_rate_eur_h=Decimal(guaranteed), business_unit=bu or None)


def trace_from_rows(pools: Iterable[Sequence[Any]], waves: Iterable[Sequence[Any]],
                    cards: Iterable[Sequence[Any]], start: datetime, end: datetime, warmup: timedelta) -> Trace:
    """Pure: the query rows (``_POOLS``, ``_WAVES``, ``_CARDS``) as a ``Trace``."""
    catalogue = [(_pool(r), int(r[13])) for r in pools]
    reclaimable = {p.pool_id for p, _ in catalogue if p.purchase_model is PurchaseModel.RECLAIMABLE}
    rate_cards: list[tuple[datetime, dict[str, Decimal]]] = []
    free: list[tuple[datetime, dict[str, int]]] = []
    others: list[tuple[datetime, dict[str, int]]] = []
    live: dict[str, tuple[list[datetime], list[int]]] = {pid: ([], []) for pid in reclaimable}
    most_free: dict[str, int] = {}
    for t, names, rates, frees, instances in cards:
        at = _utc(t)
        rate_cards.append((at, {n: Decimal(r) for n, r in zip(names, rates, strict=True)}))
        row, running = {}, {}
        for n, f, i in zip(names, frees, instances, strict=True):
            if n in reclaimable:
                row[n], running[n] = int(f), int(i)
                most_free[n] = max(most_free.get(n, 0), int(f))
                live[n][0].append(at)
                live[n][1].append(int(i))
        free.append((at, row))
        others.append((at, running))
    reclaims = []
    for t, pid, victims, no_notice in waves:
        if pid not in live:
            continue   # a pool the catalogue does not hold (or not reclaimable): nothing of ours to lose there
        at = _utc(t)
        times, counts = live[pid]
        k = bisect.bisect_right(times, at) - 1
        pool_live = max(counts[k] if k >= 0 else 0, int(victims), 1)
        reclaims.append(Reclaim(time=at, pool_id=pid, share=min(1.0, int(victims) / pool_live),
                                no_notice_share=int(no_notice) / max(int(victims), 1), hold=HOLD,
                                victims=int(victims)))
    capacity = {p.pool_id: (max(1, most_free.get(p.pool_id, 0)) if p.pool_id in reclaimable else max(1, slots))
                for p, slots in catalogue}
    return Trace(start=start, end=end, pools=tuple(p for p, _ in catalogue), capacity=capacity,
                 reclaims=tuple(sorted(reclaims, key=lambda r: (r.time, r.pool_id))), seed=1,
                 description=f"history in ClickHouse, {(end - start).total_seconds() / 86400:g} days to "
                             f"{end:%Y-%m-%d %H:%M} UTC after {warmup.total_seconds() / 86400:g} days of warm-up",
                 warmup=warmup, rate_cards=tuple(rate_cards), free=tuple(free), live=tuple(others))


def replay_contracts(trace: Trace, contracts: Sequence[Contract], units: int = 40
                     ) -> tuple[dict[str, WorkloadOutcome], tuple[str, ...]]:
    """Each workload's outcome on ``trace`` in the replay-only model (``--replay-engine model``; claims sized by
    ``size_claims``) and the sizing notes."""
    sized = size_claims(trace, contracts, units)
    outcomes = replay(trace, contracts, {c.workload: c.units for c in sized}, ReplayConfig())
    return outcomes, tuple(c.note for c in sized if c.note)


def replay_contracts_through_controller(trace: Trace, contracts: Sequence[Contract], units: int = 40,
                                        progress: Callable[[float], None] | None = None
                                        ) -> tuple[dict[str, WorkloadOutcome], tuple[str, ...], str]:
    """Each workload's outcome on ``trace`` through the production controller (the default): one production
    ``Controller`` per partition, the production ranking every five minutes — the scorer and the reclaim forecast
    at the contracts' horizons, fitted on the warm-up's history and refitted daily, as the ranking asset publishes
    them — on a fresh embedded PostgreSQL that is thrown away afterwards; the region is the history
    (``TraceRegion``). Also the sizing notes and a line on the forecast the ranking published."""
    import psycopg

    from controllers.replay.trace_region import replay_trace_through_controller

    from .replay_ranking import contract_ranker, forecast_note
    from .simulate_controller import EmbeddedPostgres, one_native_thread

    sized = size_claims(trace, contracts, units)
    region = trace.pools[0].region if trace.pools else "r1"
    try:
        pg = EmbeddedPostgres()
    except Exception as exc:  # no PostgreSQL binaries, no room for its data, refused to start
        raise CliError(f"RPL003: cannot start the embedded PostgreSQL the controller replay runs on: "
                       f"{str(exc).strip()[:300]}; install the venv's PostgreSQL (`make venv`), or pass "
                       "--replay-engine model (seconds, not a forecast) or --no-replay") from None
    try:
        with one_native_thread(), psycopg.connect(pg.database(), autocommit=True) as conn:
            ranker = contract_ranker(conn, region, contracts)
            outcomes = replay_trace_through_controller(
                trace, {c.ref: c for c in contracts}, {c.workload: c.units for c in sized}, conn,
                ranker=ranker, progress=progress)
            note = forecast_note(ranker)
    finally:
        pg.close()
    return outcomes, tuple(c.note for c in sized if c.note), note


def render_replay(trace: Trace, outcomes: Mapping[str, WorkloadOutcome], notes: Sequence[str],
                  engine: str = "controller", ranking: str = "") -> str:
    """The replay's report as text: a row per workload outcome, then the notes."""
    days = trace.days or 1.0
    rows = []
    for o in sorted(outcomes.values(), key=lambda o: (o.tier, o.workload)):
        pct = (100 * o.net_saving / o.counterfactual) if o.counterfactual else Decimal(0)
        rows.append([o.workload, str(o.units), str(o.interruptions), f"{o.interruption_rate_pct_h:.2f}%/h",
                     f"{o.wasted_pct:.2f}%", f"{o.fallback_starts} ({o.fallback_starts / days:.2f}/day)",
                     f"{100 * o.shortfall_s / o.wanted_s if o.wanted_s else 0:.2f}%", _eur(o.net_saving),
                     f"{pct:.1f}%"])
    inside = sum(1 for r in trace.reclaims if r.time >= trace.start)
    out = [f"Replay (ADR-03): {trace.description}; {inside} reclaim waves in the window "
           f"({len(trace.reclaims)} with the warm-up) over {len(trace.pools)} pools"]
    out.append(render_table(["workload", "units", "interruptions", "rate", "wasted work", "fallback starts",
                             "shortfall", "net saving", "net %"], rows))
    out += [f"  claim {n}" for n in notes]
    if ranking:
        out.append(f"  {ranking}")
    out.append(_approximations(engine))
    return "\n".join(out)


def _eur(x: Decimal) -> str:
    """``€1,234`` and ``-€1,234`` (not ``€-1,234``)."""
    return f"{'-' if x < 0 else ''}€{abs(x):,.0f}"


def _approximations(engine: str) -> str:
    if engine == "controller":
        from controllers.replay.through_controller import APPROXIMATIONS
        from controllers.replay.trace_region import TRACE_APPROXIMATIONS

        return ("Replay engine: the production controller (observe → decide → apply with the production scorer, "
                f"planner, floor keeper, fallback arbiter and breaker). Approximations: {TRACE_APPROXIMATIONS}; "
                f"{APPROXIMATIONS}.")
    return ("Replay approximations: the replay-only model (--replay-engine model), not the production controller; "
            "on the simulated region's four 30-day seeds it counted about a third of the controller's "
            "interruptions, a twentieth of its wasted work and far more shortfall (docs/benchmarks.md), so read "
            "these figures as a comparison of workloads, not a forecast. Waves from the notices and no-notice "
            "losses in the history; a pool lends at most what it had free on a rate card; no forward-capacity "
            "calendar; no boot time or scheduler.")
