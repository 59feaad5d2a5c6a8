"""A range of hours' attribution inputs as polars frames: the instance spans come from ClickHouse
as Arrow, are split into hours and summed per (hour, workload, pool, purpose, depth premium) in polars, and
every money input is kept exact as the text of its ``Decimal`` (``text``), never a float: today's rate-card
rates are ``Decimal`` of a ClickHouse ``avg`` (a Float64), some fifty decimal places, and stay so.

``build_frames`` is pure (the rows of the five queries in, frames out); ``read_frames`` runs the queries.
``ledger_inputs.hour_inputs`` turns one hour back into today's ``HourInputs`` (the ``Usage``/``Loss`` objects
``read_range`` always returned, built exactly as before), which the ledger's ``Decimal`` path uses where it is
still needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from functools import lru_cache
from typing import Any, Protocol

import polars as pl
import pyarrow as pa

from contracts.cost_attributes import (
    ATTR_DEPTH_PREMIUM,
    ATTR_PURPOSE,
    ATTR_WASTED_S,
    DEFECT_CAUSE_PREFIX,
    FALSE_POSITIVE_CAUSE,
)

from .catalogue import load_catalogue
from .store import ClickHouse

__all__ = ["EXACT", "HOUR_MS", "ArrowClickHouse", "RangeFrames", "build_frames", "dec", "read_frames",
           "text"]

ZERO = Decimal(0)
HOUR_MS = 3_600_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)
SPANS = {"workload": pl.String, "pool": pl.String, "attrs": pl.String, "t0": pl.Int64, "t1": pl.Int64}
LOSSES = {"workload": pl.String, "pool": pl.String, "cause": pl.String, "attrs": pl.String, "t": pl.Int64}


class ArrowClickHouse(ClickHouse, Protocol):
    """The store boundary plus one query answered as an Arrow table (columns in the SELECT's order)."""

    def arrow(self, sql: str, parameters: dict[str, Any] | None = None) -> pa.Table:
        """One query's result as an Arrow table."""


def ms(t: datetime) -> int:
    """``t`` in milliseconds since the epoch."""
    return ((t.replace(tzinfo=UTC) if t.tzinfo is None else t) - _EPOCH) // timedelta(milliseconds=1)


def dec(value: object) -> Decimal:
    """A JSON attribute as a ``Decimal`` (absent, empty, unreadable or not finite: 0)."""
    try:
        d = Decimal(str(value)) if value not in (None, "") else ZERO
    except ArithmeticError:
        return ZERO
    return d if d.is_finite() else ZERO


def text(value: Decimal) -> str:
    """A ``Decimal`` as frame text: exact, and equal values give equal text (0.10 and 0.1 group together)."""
    return str(value.normalize(EXACT)) if value else "0"  # normalize() in the default context rounds to 28 digits


@dataclass(frozen=True)
class RangeFrames:
    """Hours [start, start + n h). Every money input is the exact text of its ``Decimal`` (``text``); usage
    hours are ``ms`` / 3.6e6, loss hours ``wasted`` seconds / 3600.

    ``usage``: h, workload, pool, model, purpose, premium, ms, rate, guar (one row per today's ``Usage``);
    ``losses``: h, seq, workload, pool, cause, wasted, guar; ``storage``: h, workload, eur; ``orch``: h, eur."""

    start: datetime
    n: int
    usage: pl.DataFrame
    losses: pl.DataFrame
    storage: pl.DataFrame
    orch: pl.DataFrame

    def hour(self, h: int) -> RangeFrames:
        """The frames of hour ``h`` alone, renumbered as hour 0."""
        def one(f: pl.DataFrame) -> pl.DataFrame:
            return f.filter(pl.col("h") == h).with_columns(pl.lit(0, pl.Int64).alias("h"))

        return RangeFrames(self.start + timedelta(hours=h), 1, one(self.usage), one(self.losses),
                           one(self.storage), one(self.orch))


@lru_cache(maxsize=4096)
def _launch_key(attrs: str) -> tuple[str, str]:
    a = json.loads(attrs or "{}")
    return str(a.get(ATTR_PURPOSE) or "work"), text(dec(a.get(ATTR_DEPTH_PREMIUM)))


def _loss_cause(cause: str) -> str:
    if cause.startswith(DEFECT_CAUSE_PREFIX):
        return "defect"
    return "false-positive" if cause == FALSE_POSITIVE_CAUSE else "reclaim"


def _hour_split(spans: pl.DataFrame, s_ms: int, stop_ms: int) -> pl.DataFrame:
    """Each instance's milliseconds in each hour of the range (today's per-instance loop, vectorised)."""
    lo = pl.max_horizontal(pl.col("t0"), pl.lit(s_ms))
    hi = pl.min_horizontal(pl.col("t1"), pl.lit(stop_ms))
    first = (lo - s_ms) // HOUR_MS
    end = -((s_ms - hi) // HOUR_MS)
    split = (spans.with_columns(lo.alias("lo"), hi.alias("hi"))
             .filter(end > first)
             .with_columns(pl.int_ranges(first, end).alias("h")).explode("h"))
    start_h = pl.lit(s_ms) + pl.col("h") * HOUR_MS
    return split.with_columns(
        (pl.min_horizontal(pl.col("hi"), start_h + HOUR_MS) - pl.max_horizontal(pl.col("lo"), start_h))
        .alias("ms")).filter(pl.col("ms") > 0)


def _usage(spans: pl.DataFrame, s_ms: int, stop_ms: int, pools: dict[str, Any],
           rates: dict[tuple[str, int], tuple[Decimal, Decimal]]) -> pl.DataFrame:
    keys = {a: _launch_key(a) for a in spans["attrs"].unique().to_list()}
    attrs = pl.DataFrame({"attrs": list(keys), "purpose": [k[0] for k in keys.values()],
                          "premium": [k[1] for k in keys.values()]},
                         schema={"attrs": pl.String, "purpose": pl.String, "premium": pl.String})
    usage = (_hour_split(spans, s_ms, stop_ms).join(attrs, on="attrs", how="left")
             .group_by("h", "workload", "pool", "purpose", "premium").agg(pl.col("ms").sum()))
    unknown = usage.filter(~pl.col("pool").is_in(list(pools))).sort("h", "workload", "pool")
    if unknown.height:
        raise ValueError(f"instance of {unknown['workload'][0]} ran in pool {unknown['pool'][0]!r}, which the "
                         "catalogue does not know; refresh the pool_catalogue asset first")
    cat = pl.DataFrame({"pool": list(pools), "model": [p.purchase_model for p in pools.values()],
                        "cat_rate": [text(p.rate_eur_h) for p in pools.values()],
                        "cat_guar": [text(p.guaranteed_rate_eur_h) for p in pools.values()]},
                       schema={"pool": pl.String, "model": pl.String, "cat_rate": pl.String, "cat_guar": pl.String})
    card = pl.DataFrame({"pool": [k[0] for k in rates], "h": [k[1] for k in rates],
                         "card_rate": [text(r[0]) for r in rates.values()],
                         "card_guar": [text(r[1]) for r in rates.values()]},
                        schema={"pool": pl.String, "h": pl.Int64, "card_rate": pl.String, "card_guar": pl.String})
    return (usage.join(cat, on="pool", how="left").join(card, on=["pool", "h"], how="left")
            .with_columns(pl.coalesce("card_rate", "cat_rate").alias("rate"),
                          pl.coalesce("card_guar", "cat_guar").alias("guar"))
            .select("h", "workload", "pool", "model", "purpose", "premium", "ms", "rate", "guar"))


def _losses(rows: pl.DataFrame, s_ms: int, pools: dict[str, Any],
            rates: dict[tuple[str, int], tuple[Decimal, Decimal]]) -> pl.DataFrame:
    out: list[tuple[int, int, str, str, str, str, str]] = []
    for seq, (workload, pool, cause, attrs, t) in enumerate(rows.iter_rows()):
        wasted = dec(json.loads(attrs).get(ATTR_WASTED_S))
        if wasted == 0:
            continue
        h = (t - s_ms) // HOUR_MS
        cat = pools.get(pool)
        guaranteed = rates.get((pool, h), (ZERO, cat.guaranteed_rate_eur_h if cat else ZERO))[1]
        out.append((h, seq, workload, pool, _loss_cause(cause), text(wasted), text(guaranteed)))
    return pl.DataFrame(out, orient="row", schema={
        "h": pl.Int64, "seq": pl.Int64, "workload": pl.String, "pool": pl.String, "cause": pl.String,
        "wasted": pl.String, "guar": pl.String})


def build_frames(start: datetime, n: int, stop: datetime, spans: pl.DataFrame, loss_rows: pl.DataFrame,
                 pools: dict[str, Any], rates: dict[tuple[str, int], tuple[Decimal, Decimal]],
                 storage: Sequence[tuple[int, str, Decimal]], orch: Sequence[tuple[int, Decimal]]) -> RangeFrames:
    """Frames from the queries' rows: ``spans`` (SPANS: launch attributes, first launch and termination in
    epoch ms), ``loss_rows`` (LOSSES, in time order), the catalogue's pools by name, rate cards by (pool, hour
    index), storage (hour index, workload, EUR) and the orchestrator's cost (hour index, EUR)."""
    s_ms, stop_ms = ms(start), ms(stop)
    store = pl.DataFrame([(h, w, text(eur)) for h, w, eur in storage], orient="row",
                         schema={"h": pl.Int64, "workload": pl.String, "eur": pl.String})
    orchestrator = pl.DataFrame([(h, text(eur)) for h, eur in orch], orient="row",
                                schema={"h": pl.Int64, "eur": pl.String})
    return RangeFrames(start, n, _usage(spans, s_ms, stop_ms, pools, rates), _losses(loss_rows, s_ms, pools, rates),
                       store, orchestrator)


def _frame(ch: ArrowClickHouse, sql: str, p: dict[str, Any], schema: dict[str, Any]) -> pl.DataFrame:
    table = ch.arrow(sql, p)
    if not table.num_columns:
        return pl.DataFrame(schema=schema)
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    df.columns = list(schema)
    return df.with_columns(pl.col(c).dt.epoch("ms") for c, t in schema.items()
                           if t == pl.Int64 and df.schema[c] != pl.Int64).cast(schema)  # type: ignore[arg-type]


def read_frames(ch: ArrowClickHouse, region: str, start: datetime, end: datetime, lookback_days: int = 90,
                until: datetime | None = None) -> RangeFrames:
    """Today's five queries of ``backfill.read_range``, the two large ones (instance spans, losses) as Arrow."""
    n = int((end - start) // timedelta(hours=1))
    stop = end if until is None else max(start, min(end, until))
    s_ms = ms(start)
    p = {"r": region, "h0": start, "h1": stop, "he": end,
         "lb": min(start + timedelta(hours=1), stop) - timedelta(days=lookback_days)}
    index: Callable[[datetime], int] = lambda t: (ms(t) - s_ms) // HOUR_MS  # noqa: E731
    pools = {c.pool: c for c in load_catalogue(ch, region)}
    rates = {(str(pool), index(h)): (Decimal(rate), Decimal(guaranteed)) for pool, h, rate, guaranteed in ch.rows(
        "SELECT pool, toStartOfHour(time) AS h, avg(rate_eur_h), avg(guaranteed_rate_eur_h) FROM rate_cards "
        "WHERE region = {r:String} AND time >= {h0:DateTime64(3)} AND time < {h1:DateTime64(3)} "
        "GROUP BY pool, h", p)}
    spans = _frame(ch, (
        "SELECT argMinIf(workload, time, kind = 'launched') AS w, argMinIf(pool, time, kind = 'launched'), "
        "argMinIf(attributes, time, kind = 'launched'), minIf(time, kind = 'launched'), "
        "if(countIf(kind = 'terminated') > 0, minIf(time, kind = 'terminated'), {h1:DateTime64(3)}) "
        "FROM events WHERE region = {r:String} AND kind IN ('launched', 'terminated') AND instance != '' "
        "AND time < {h1:DateTime64(3)} AND time >= {lb:DateTime64(3)} "
        "GROUP BY instance HAVING countIf(kind = 'launched') > 0 AND w != ''"), p, SPANS)
    losses = _frame(ch, (
        "SELECT workload, pool, cause, attributes, time FROM events WHERE region = {r:String} AND workload != '' "
        "AND time >= {h0:DateTime64(3)} AND time < {h1:DateTime64(3)} AND NOT drill "
        f"AND JSONHas(attributes, '{ATTR_WASTED_S}') ORDER BY time"), p, LOSSES)
    storage = [(index(hour), str(w), Decimal(eur)) for hour, w, eur in ch.rows(
        "SELECT hour, workload, sum(gib_hours * eur_per_gib_h) FROM storage_usage FINAL "
        "WHERE hour >= {h0:DateTime} AND hour < {he:DateTime} GROUP BY hour, workload", p)]
    orch = [(index(hour), Decimal(cost)) for hour, cost in ch.rows(
        "SELECT hour, sum(cost_eur) FROM orchestrator_usage FINAL WHERE region = {r:String} "
        "AND hour >= {h0:DateTime} AND hour < {he:DateTime} GROUP BY hour", p)]
    return build_frames(start, n, stop, spans, losses, pools, rates, storage, orch)
