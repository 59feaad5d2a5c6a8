"""The reclaim forecast's one feature definition, on polars, for the ClickHouse history and the replay's feed.

Inputs (the same three frames whichever path builds them):

- ``cards``: one row per (pool, rate-card time): ``time`` (UTC datetime), ``pool``, ``rate_eur_h``,
  ``guaranteed_rate_eur_h``, ``free``, ``capacity``, ``instances`` (every tenant's, the pool's occupancy) and
  ``forward_free`` (the provider's forward calendar, expected free instances ahead; null when not known);
- ``pools``: ``pool``, ``aggregate``, ``hall``, ``vcpu``, ``group`` (the learned correlation group; the
  aggregate when none was learned, ADR-05);
- ``reclaims``: one row per reclaimed instance (its first notice or no-notice loss, drills excluded):
  ``time``, ``pool``, ``notice`` (bool).

Every window count is the number of reclaims in (t - w, t], read off cumulative counts per key, so a frame of
one snapshot (the replay's five-minute call) and a frame of a month of cards (training) get the same numbers.
Labels (``labels``) look forward the same way: the share of the pool's instances at t reclaimed in (t, t + h].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

__all__ = ["CARD_SCHEMA", "FEATURES", "POOL_SCHEMA", "RECLAIM_SCHEMA", "WINDOWS", "feature_frame", "labels", "time_lit",
           "window_counts"]

TIME = pl.Datetime("ms", "UTC")
CARD_SCHEMA: dict[str, Any] = {"time": TIME, "pool": pl.String, "rate_eur_h": pl.Float64,
                               "guaranteed_rate_eur_h": pl.Float64, "free": pl.Int64, "capacity": pl.Int64,
                               "instances": pl.Int64, "forward_free": pl.Float64}
POOL_SCHEMA: dict[str, Any] = {"pool": pl.String, "aggregate": pl.String, "hall": pl.String, "vcpu": pl.Int64,
                               "group": pl.String}
RECLAIM_SCHEMA: dict[str, Any] = {"time": TIME, "pool": pl.String, "notice": pl.Boolean}

# recent reclaim windows, as (column suffix, width)
WINDOWS: tuple[tuple[str, timedelta], ...] = (("1h", timedelta(hours=1)), ("6h", timedelta(hours=6)),
                                              ("24h", timedelta(hours=24)), ("7d", timedelta(days=7)))
FEATURES: tuple[str, ...] = (
    "price_ratio", "free_share", "aggregate_free_share", "hall_free_share", "forward_share", "forward_drop",
    "hour_sin", "hour_cos", "weekday",
    *(f"pool_rate_{k}" for k, _ in WINDOWS), "aggregate_rate_1h", "aggregate_rate_24h", "burst",
    "group_rate_6h", "group_rate_24h", "hall_reclaims_24h", "occupancy")


def _cumulative(reclaims: pl.DataFrame, pools: pl.DataFrame, key: str) -> pl.DataFrame:
    """Per ``key`` (pool, aggregate, group or hall): each reclaim's time and the count so far, sorted by time."""
    frame = reclaims.select("time", "pool")
    if key != "pool":
        frame = frame.join(pools.select("pool", key), on="pool", how="inner").select("time", key)
    return (frame.rename({key: "key"}).sort("time")
            .with_columns(pl.int_range(1, pl.len() + 1).over("key").alias("cum")))


def _count_at(rows: pl.DataFrame, cum: pl.DataFrame, at: pl.Expr, name: str) -> pl.DataFrame:
    """``rows`` (with ``key``) plus ``name``: reclaims of the row's key at or before ``at``."""
    probe = rows.with_columns(at.alias("_at")).with_row_index("_row").sort("_at")
    joined = probe.join_asof(cum.rename({"time": "_t"}), left_on="_at", right_on="_t", by="key",
                             strategy="backward", check_sortedness=False)
    return (joined.sort("_row").with_columns(pl.col("cum").fill_null(0).alias(name))
            .drop("_row", "_at", "_t", "cum"))


def window_counts(rows: pl.DataFrame, reclaims: pl.DataFrame, pools: pl.DataFrame, key: str,
                  spans: Sequence[tuple[str, timedelta]], *, forward: bool = False) -> pl.DataFrame:
    """``rows`` (``time`` and ``key``'s column) plus one count column per (name, width): the reclaims of the
    row's ``key`` in (t - w, t], or in (t, t + w] when ``forward``."""
    if not forward and rows["time"].n_unique() == 1:
        return _snapshot_counts(rows, _pool_counts(reclaims, rows["time"][0], [w for _, w in spans]), pools, key,
                                spans)
    cum = _cumulative(reclaims, pools, key)
    out = rows.with_columns(pl.col(key).alias("key"))
    out = _count_at(out, cum, pl.col("time"), "_now")
    for name, width in spans:
        out = _count_at(out, cum, pl.col("time") + width if forward else pl.col("time") - width, "_then")
        diff = pl.col("_then") - pl.col("_now") if forward else pl.col("_now") - pl.col("_then")
        out = out.with_columns(diff.alias(name)).drop("_then")
    return out.drop("_now", "key")


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_lit(when: datetime) -> pl.Expr:
    """``when`` as a polars literal: the value ``pl.lit`` makes of a zone-aware datetime (microseconds; compared as
    the same instant), at a sixth of its cost — polars 2.1 spends 0.2 ms converting one, and a snapshot compares
    against a dozen every five replayed minutes. A naive datetime goes to ``pl.lit``."""
    if when.tzinfo is None:
        return pl.lit(when)
    micros = (when - _EPOCH) // timedelta(microseconds=1)
    return pl.from_epoch(pl.lit(micros), time_unit="us").dt.replace_time_zone("UTC")


def _width(width: timedelta) -> str:
    return f"_w{int(width.total_seconds())}"


def _pool_counts(reclaims: pl.DataFrame, now: Any, widths: Sequence[timedelta]) -> pl.DataFrame:
    """Per pool, the reclaims in (now - w, now] for every width (one column each, ``_width``'s name): the one pass
    over the reclaims a snapshot makes; an aggregate's, group's or hall's count is the sum of its pools'."""
    widest = max(widths)
    return (reclaims.filter((pl.col("time") <= time_lit(now)) & (pl.col("time") > time_lit(now - widest)))
            .group_by("pool")
            .agg([(pl.col("time") > time_lit(now - w)).sum().cast(pl.Int64).alias(_width(w))
                  for w in sorted(set(widths))]))


def _snapshot_counts(rows: pl.DataFrame, per_pool: pl.DataFrame, pools: pl.DataFrame, key: str,
                     spans: Sequence[tuple[str, timedelta]]) -> pl.DataFrame:
    """``window_counts`` of rows that share one card time (the replay's five-minute call), from ``_pool_counts``:
    the same counts, summed over the key's pools instead of read off cumulative counts (polars calls on a week
    of reclaims, four keys a card, were most of a replay's forecast)."""
    if not spans:
        return rows
    cols = [pl.col(_width(w)).alias(name) for name, w in spans]
    if key == "pool":
        counts = per_pool.select("pool", *cols)
    else:
        counts = (per_pool.join(pools.select("pool", key), on="pool", how="inner").group_by(key)
                  .agg(pl.col(_width(w)).sum().alias(name) for name, w in spans))
    names = [name for name, _ in spans]
    return rows.join(counts, on=key, how="left").with_columns(pl.col(n).fill_null(0) for n in names)


# the window counts each feature reads, per key: (column, width)
_SPANS: tuple[tuple[str, tuple[tuple[str, timedelta], ...]], ...] = (
    ("pool", tuple((f"_p{k}", w) for k, w in WINDOWS)),
    ("aggregate", (("_a1h", timedelta(hours=1)), ("_a24h", timedelta(hours=24)), ("_a7d", timedelta(days=7)))),
    ("group", (("_g6h", timedelta(hours=6)), ("_g24h", timedelta(hours=24)))),
    ("hall", (("hall_reclaims_24h", timedelta(hours=24)),)))


def _shares(cards: pl.DataFrame, by: str) -> pl.Expr:
    """Free vCPU over capacity vCPU of the row's ``by`` (aggregate or hall) at the same card time."""
    room = (pl.col("free") * pl.col("vcpu")).sum().over("time", by)
    total = (pl.col("capacity") * pl.col("vcpu")).sum().over("time", by)
    return pl.when(total > 0).then(room / total).otherwise(0.0)


def feature_frame(cards: pl.DataFrame, pools: pl.DataFrame, reclaims: pl.DataFrame) -> pl.DataFrame:
    """One row per card row with ``time``, ``pool``, ``instances`` and every column of ``FEATURES``; cards of
    pools missing from ``pools`` are dropped (not reclaimable, or not in the catalogue)."""
    frame = cards.cast(pl.Schema(CARD_SCHEMA)).join(pools.cast(pl.Schema(POOL_SCHEMA)), on="pool", how="inner")
    reclaims = reclaims.cast(pl.Schema(RECLAIM_SCHEMA))
    per = pl.max_horizontal(pl.col("instances"), 1).cast(pl.Float64)
    cap = pl.col("capacity").cast(pl.Float64)
    hour = pl.col("time").dt.hour().cast(pl.Float64) + pl.col("time").dt.minute().cast(pl.Float64) / 60.0
    per_pool = (_pool_counts(reclaims, frame["time"][0], [w for _, spans in _SPANS for _, w in spans])
                if len(frame) and frame["time"].n_unique() == 1 else None)   # one card: one pass for every key
    frame = frame.with_columns(
        pl.when(pl.col("guaranteed_rate_eur_h") > 0).then(pl.col("rate_eur_h") / pl.col("guaranteed_rate_eur_h"))
        .otherwise(1.0).alias("price_ratio"),
        pl.when(cap > 0).then(pl.col("free") / cap).otherwise(0.0).alias("free_share"),
        _shares(frame, "aggregate").alias("aggregate_free_share"),
        _shares(frame, "hall").alias("hall_free_share"),
        pl.when(cap > 0).then(pl.min_horizontal(pl.col("forward_free"), pl.col("free")) / cap).otherwise(0.0)
        .alias("forward_share"),
        pl.when(cap > 0).then((pl.col("free") - pl.col("forward_free")) / cap).otherwise(0.0).alias("forward_drop"),
        (2 * math.pi * hour / 24).sin().alias("hour_sin"), (2 * math.pi * hour / 24).cos().alias("hour_cos"),
        pl.col("time").dt.weekday().cast(pl.Float64).alias("weekday"),
        pl.when(cap > 0).then(pl.col("instances") / cap).otherwise(1.0).alias("occupancy"))
    for key, spans in _SPANS:
        frame = (window_counts(frame, reclaims, pools, key, spans) if per_pool is None
                 else _snapshot_counts(frame, per_pool, pools, key, spans))
    agg_n = pl.max_horizontal(pl.col("instances").sum().over("time", "aggregate"), 1).cast(pl.Float64)
    grp_n = pl.max_horizontal(pl.col("instances").sum().over("time", "group"), 1).cast(pl.Float64)
    frame = frame.with_columns(
        *(((pl.col(f"_p{k}") / per) / (w.total_seconds() / 3600)).alias(f"pool_rate_{k}") for k, w in WINDOWS),
        (pl.col("_a1h") / agg_n).alias("aggregate_rate_1h"), (pl.col("_a24h") / agg_n / 24).alias("aggregate_rate_24h"),
        # a burst: the aggregate's last hour against its hourly mean over the week (1 = an ordinary hour)
        ((pl.col("_a1h") + 0.1) / (pl.col("_a7d") / 168 + 0.1)).alias("burst"),
        (pl.col("_g6h") / grp_n / 6).alias("group_rate_6h"), (pl.col("_g24h") / grp_n / 24).alias("group_rate_24h"),
        pl.col("hall_reclaims_24h").cast(pl.Float64))
    return frame.select("time", "pool", "instances", *FEATURES).cast({c: pl.Float64 for c in FEATURES})


def labels(frame: pl.DataFrame, reclaims: pl.DataFrame, horizons_min: Sequence[int],
           until: object | None = None) -> pl.DataFrame:
    """``frame`` (``time``, ``pool``, ``instances``) plus, per horizon h in minutes, ``y_{h}``: the share of the
    pool's instances at t reclaimed in (t, t + h] (held to [0, 1]) and ``y_{h}_nn``: of those, without notice.
    Rows whose horizon ends after ``until`` (default: the last reclaim or card seen) are dropped: their outcome is
    not known yet."""
    reclaims = reclaims.cast(pl.Schema(RECLAIM_SCHEMA))
    last = until if until is not None else frame["time"].max()
    spans = [(f"_n{h}", timedelta(minutes=h)) for h in horizons_min]
    pools = frame.select("pool").unique()   # counts per pool need no pool attributes
    out = window_counts(frame, reclaims, pools, "pool", spans, forward=True)
    nn = window_counts(frame.select("time", "pool"), reclaims.filter(~pl.col("notice")), pools, "pool",
                       [(f"_nn{h}", timedelta(minutes=h)) for h in horizons_min], forward=True)
    out = pl.concat([out, nn.drop("time", "pool")], how="horizontal")
    per = pl.max_horizontal(pl.col("instances"), 1).cast(pl.Float64)
    out = out.with_columns(
        *((pl.min_horizontal(pl.col(f"_n{h}") / per, 1.0)).alias(f"y_{h}") for h in horizons_min),
        *((pl.min_horizontal(pl.col(f"_nn{h}") / per, 1.0)).alias(f"y_{h}_nn") for h in horizons_min))
    longest = timedelta(minutes=max(horizons_min))
    return (out.filter(pl.col("time") + longest <= pl.lit(last).cast(TIME))
            .drop([c for c in out.columns if c.startswith("_n")]))
