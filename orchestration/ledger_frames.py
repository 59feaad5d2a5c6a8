"""The hourly ledger on polars frames (issue 18): ``attribution.attribute``, ``orchestrator_shares`` and
``ledger.hour_rows`` computed for every hour and workload of a ``RangeFrames`` at once, in exact integers.

Every quantity is an integer numerator over a known denominator (usage hours: ms / 3.6e6; money: × the
rates' decimal scale; losses: wasted seconds / 3600), summed in Int128 and rounded to the 6th decimal
half-even as ``q6`` does. Today's ``Decimal`` code rounds a 28-digit approximation of the same rationals, so
it agrees with the exact result everywhere except on an exact half-way tie, where the approximation's last
digit decides. An hour with such a tie (or numbers too large for Int128) is handed to the ``Decimal`` code,
so the lines and rows are identical to today's in every case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from math import gcd
from typing import Any

import polars as pl

from .attribution import LABEL, LINES, LedgerLine
from .range_frames import HOUR_MS, RangeFrames, hour_inputs

__all__ = ["FrameLedger", "attribute_frames"]

I128 = pl.Int128
LIMIT = 2 ** 125
FIELDS = ("instance_hours", "useful_hours", "counterfactual_eur", "gross_saving_eur", *LINES[:5],
          "wasted_hours", "wasted_eur", "defect_wasted_hours", "defect_wasted_eur", "depth_premium_eur",
          "reclaimable_hours", "fallback_hours", "false_positive_hours", "false_positive_eur")


@dataclass(frozen=True)
class FrameLedger:
    lines: list[list[LedgerLine]]                      # per hour, workloads sorted
    ledger_rows: list[tuple[object, ...]]
    cost_rows: list[tuple[object, ...]]
    decimal_hours: tuple[int, ...] = ()                # hours handed to the Decimal code (ties)


def _q6(num: pl.Expr, den: int | pl.Expr, name: str) -> list[pl.Expr]:
    """``name`` (micro-units, half-even), ``name__tie`` (exactly half-way) and ``name__neg`` (below 0)."""
    if isinstance(den, int):
        g = gcd(10 ** 6, den)
        scaled, div = num.cast(I128) * (10 ** 6 // g), pl.lit(den // g, I128)
    else:
        scaled, div = num.cast(I128) * 10 ** 6, den.cast(I128)
    q = scaled // div
    twice = (scaled - q * div) * 2
    up = (twice > div) | ((twice == div) & (q % 2 == 1))
    return [(q + up.cast(I128)).alias(name), (twice == div).alias(f"{name}__tie"), (num < 0).alias(f"{name}__neg")]


def _d6(micro: int, neg: bool = False) -> Decimal:
    return Decimal("-0.000000") if micro == 0 and neg else Decimal(micro).scaleb(-6)


def _s6(micro: int, neg: bool) -> str:
    sign = "-" if micro < 0 or (micro == 0 and neg) else ""
    return f"{sign}{abs(micro) // 10 ** 6}.{abs(micro) % 10 ** 6:06d}"


def _with_line(usage: pl.DataFrame) -> pl.DataFrame:
    line = (pl.when(pl.col("purpose") == "headroom").then(pl.lit("headroom_eur"))
            .when((pl.col("purpose") == "fallback") | (pl.col("model") == "guaranteed")).then(pl.lit("fallback_eur"))
            .when((pl.col("purpose") == "floor") | (pl.col("model") == "committed")).then(pl.lit("floor_eur"))
            .otherwise(pl.lit("reclaimable_eur")))
    ms = pl.col("ms").cast(I128)
    return usage.with_columns(line.alias("line")).with_columns(
        (ms * pl.col("rate")).alias("cost"), (ms * pl.col("premium")).alias("prem"),
        pl.when(pl.col("purpose") != "headroom").then(ms * pl.col("guar")).otherwise(0).alias("work"),
        pl.when(pl.col("purpose") != "headroom").then(ms).otherwise(0).alias("useful_ms"),
        pl.when(pl.col("line") == "reclaimable_eur").then(ms * (pl.col("guar") - pl.col("rate")))
        .otherwise(0).alias("gross"))


def _usage_sums(usage: pl.DataFrame) -> list[pl.Expr]:
    by_line = [pl.col("cost").filter(pl.col("line") == ln).sum().alias(ln) for ln in LINES[:4]]
    seen = [(pl.col("line") == ln).any().alias(f"{ln}__seen") for ln in LINES[:4]]
    return [pl.col("ms").cast(I128).sum().alias("inst_ms"), pl.col("useful_ms").sum(), pl.col("work").sum(),
            pl.col("cost").sum(), pl.col("prem").sum(), pl.col("gross").sum(), *by_line, *seen,
            pl.col("ms").filter(pl.col("line") == "reclaimable_eur").cast(I128).sum().alias("reclaim_ms"),
            pl.col("ms").filter(pl.col("line") == "fallback_eur").cast(I128).sum().alias("fallback_ms"),
            (pl.col("purpose") != "headroom").any().alias("work__seen"),
            (pl.col("line") == "reclaimable_eur").any().alias("gross__seen"), pl.len().alias("usage_rows")]


def _loss_sums(losses: pl.DataFrame) -> list[pl.Expr]:
    value = pl.col("wasted") * pl.col("guar")
    defect, fp = pl.col("cause") == "defect", pl.col("cause") == "false-positive"
    return [pl.col("wasted").filter(~defect).sum().alias("wasted_w"), value.filter(~defect).sum().alias("wasted_v"),
            pl.col("wasted").filter(defect).sum().alias("defect_w"), value.filter(defect).sum().alias("defect_v"),
            pl.col("wasted").filter(fp).sum().alias("fp_w"), value.filter(fp).sum().alias("fp_v"),
            (~defect).any().alias("wasted__seen"), defect.any().alias("defect__seen"), fp.any().alias("fp__seen")]


def _dens(frames: RangeFrames) -> dict[str, int]:
    r, w = frames.scales["rate"], frames.scales["wasted"]
    return {"h": HOUR_MS, "eur": HOUR_MS * 10 ** r, "lh": 3600 * 10 ** w, "leur": 3600 * 10 ** (w + r),
            "w": 10 ** w, "cf": HOUR_MS * 10 ** (r + w), "storage": 10 ** frames.scales["storage"]}


def _fits(frames: RangeFrames, usage: pl.DataFrame) -> bool:
    """Whether every product below stays inside Int128 (a bound from the largest inputs)."""
    def top(f: pl.DataFrame, expr: pl.Expr) -> int:
        value = f.select(expr.abs().max()).item() if f.height else 0
        return int(value or 0)

    ms_hour = top(usage.group_by("h").agg(pl.col("ms").sum()), pl.col("ms"))
    money = max(top(usage, pl.col(c)) for c in ("rate", "guar", "premium")) if usage.height else 0
    wasted = top(frames.losses.group_by("h").agg(pl.col("wasted").abs().sum()), pl.col("wasted"))
    loss_guar = top(frames.losses, pl.col("guar"))
    w = 10 ** frames.scales["wasted"]
    return max(ms_hour * 2 * money * w, wasted * loss_guar * 1000, top(frames.storage, pl.col("eur")),
               top(frames.orch, pl.col("eur")) * ms_hour) * 10 ** 6 < LIMIT


def _shares(frames: RangeFrames, keys: pl.DataFrame, inst: pl.DataFrame) -> pl.DataFrame:
    """``orchestrator_shares`` per hour: pro rata to instance-hours, the remainder to the largest consumer."""
    o = frames.scales["orchestrator"]
    f = (keys.join(inst, on=["h", "workload"], how="left").with_columns(pl.col("inst_ms").fill_null(0))
         .join(frames.orch, on="h", how="left").with_columns(pl.col("eur").fill_null(0))
         .with_columns(pl.col("inst_ms").sum().over("h").alias("total_ms")))
    live = (pl.col("total_ms") > 0) & (pl.col("eur") != 0)
    f = f.with_columns(*_q6(pl.col("eur") * pl.col("inst_ms"), pl.lit(10 ** o, I128) * pl.col("total_ms"), "share"),
                       *_q6(pl.col("eur"), 10 ** o, "total"))
    f = f.with_columns(pl.when(live).then(pl.col("share")).otherwise(0).alias("share"),
                       (live & pl.col("share__tie")).alias("share__tie"))
    f = f.sort("h", "inst_ms", "workload", descending=[False, True, True]).with_columns(
        (pl.int_range(pl.len()).over("h") == 0).alias("biggest"),
        (live & ((pl.col("inst_ms") == pl.col("inst_ms").max().over("h")).sum().over("h") > 1)).alias("max__tie"))
    remainder = pl.col("total") - pl.col("share").sum().over("h")
    return f.with_columns(pl.when(live & pl.col("biggest")).then(pl.col("share") + remainder)
                          .otherwise(pl.col("share")).alias("orchestrator_eur"),
                          (pl.col("share__tie") | pl.col("total__tie") & live | pl.col("max__tie")).alias("orch__tie")
                          ).select("h", "workload", "orchestrator_eur", "orch__tie")


def _ledger(frames: RangeFrames, usage: pl.DataFrame, d: dict[str, int]) -> pl.DataFrame:
    u = usage.group_by("h", "workload").agg(_usage_sums(usage))
    lo = frames.losses.group_by("h", "workload").agg(_loss_sums(frames.losses))
    keys = pl.concat([u.select("h", "workload"), lo.select("h", "workload"),
                      frames.storage.select("h", "workload")]).unique()
    f = (keys.join(u, on=["h", "workload"], how="left").join(lo, on=["h", "workload"], how="left")
         .join(frames.storage, on=["h", "workload"], how="left")
         .join(_shares(frames, keys, u.select("h", "workload", "inst_ms")), on=["h", "workload"], how="left"))
    f = f.with_columns(pl.col(pl.Int128).fill_null(0)).sort("h", "workload")
    w = d["w"]
    return f.with_columns(
        *_q6(pl.col("inst_ms"), d["h"], "instance_hours"),
        *_q6(pl.col("useful_ms") * w - pl.col("wasted_w") * 1000, d["h"] * w, "useful_hours"),
        *_q6(pl.col("work") * w - pl.col("wasted_v") * 1000, d["cf"], "counterfactual_eur"),
        *_q6(pl.col("gross"), d["eur"], "gross_saving_eur"),
        *(e for ln in LINES[:4] for e in _q6(pl.col(ln), d["eur"], ln)),
        *_q6(pl.col("eur"), d["storage"], "storage_eur"),
        *_q6(pl.col("wasted_w"), d["lh"], "wasted_hours"), *_q6(pl.col("wasted_v"), d["leur"], "wasted_eur"),
        *_q6(pl.col("defect_w"), d["lh"], "defect_wasted_hours"),
        *_q6(pl.col("defect_v"), d["leur"], "defect_wasted_eur"),
        *_q6(pl.col("prem"), d["eur"], "depth_premium_eur"),
        *_q6(pl.col("reclaim_ms"), d["h"], "reclaimable_hours"), *_q6(pl.col("fallback_ms"), d["h"], "fallback_hours"),
        *_q6(pl.col("fp_w"), d["lh"], "false_positive_hours"), *_q6(pl.col("fp_v"), d["leur"], "false_positive_eur"))


def _lines(f: pl.DataFrame, start: datetime) -> list[tuple[int, LedgerLine]]:
    out = []
    for r in f.iter_rows(named=True):
        v = {k: _d6(r[k], r[f"{k}__neg"]) for k in FIELDS}
        costs = sum((r[k] for k in LINES[:5]), r["orchestrator_eur"])
        net = r["counterfactual_eur"] - costs
        period = (start + timedelta(hours=r["h"])).strftime("%Y-%m-%dT%H:00Z")
        out.append((r["h"], LedgerLine(
            workload=r["workload"], period=period, **v, orchestrator_eur=_d6(r["orchestrator_eur"]),
            costs_eur=_d6(costs), net_saving_eur=_d6(net, costs == 0 and v["counterfactual_eur"].is_signed()),
            label=LABEL)))
    return out


def _ties(f: pl.DataFrame) -> set[int]:
    tie = pl.any_horizontal(pl.col("^.*__tie$"))
    return set(f.filter(tie)["h"].to_list())


def attribute_frames(frames: RangeFrames, region: str) -> FrameLedger:
    """Ledger lines and the ``savings_ledger`` / ``cost_attribution`` rows of every hour of ``frames``."""
    from .ledger import LEDGER_COLUMNS, decimal_cost_rows, decimal_lines

    usage = _with_line(frames.usage)
    exact = _fits(frames, usage)
    d = _dens(frames)
    ledger = _ledger(frames, usage, d) if exact else None
    costs = _cost_frame(frames, usage, d) if exact else None
    ties = set(range(frames.n)) if ledger is None or costs is None else _ties(ledger) | _ties(costs)
    by_hour: list[list[LedgerLine]] = [[] for _ in range(frames.n)]
    cost_by_hour: list[list[tuple[object, ...]]] = [[] for _ in range(frames.n)]
    if ledger is not None and costs is not None:
        for h, line in _lines(ledger.filter(~pl.col("h").is_in(list(ties))), frames.start):
            by_hour[h].append(line)
        for h, row in _cost_rows(costs.filter(~pl.col("h").is_in(list(ties))), frames.start, region):
            cost_by_hour[h].append(row)
    for h in sorted(ties):
        inputs = hour_inputs(frames.hour(h))[0]
        by_hour[h], cost_by_hour[h] = decimal_lines(inputs), decimal_cost_rows(region, inputs)
    ledger_rows = [((frames.start + timedelta(hours=h)).replace(tzinfo=None),
                    *(getattr(ln, c) for c in LEDGER_COLUMNS[1:])) for h, lines in enumerate(by_hour) for ln in lines]
    return FrameLedger(by_hour, ledger_rows, [r for rows in cost_by_hour for r in rows], tuple(sorted(ties)))


COST_KEYS = {  # attribute key → (numerator column, denominator, presence column or None: always there)
    "instance_hours": ("inst_ms", "h", None), "cost_eur": ("cost", "eur", None),
    **{ln: (ln, "eur", f"{ln}__seen") for ln in LINES[:4]}, "depth_premium_eur": ("prem", "eur", "usage_rows"),
    "useful_value_eur": ("work", "eur", None), "gross_saving_eur": ("gross", "eur", "gross__seen"),
    "wasted_eur": ("wasted_v", "leur", None), "wasted_hours": ("wasted_w", "lh", "wasted__seen"),
    "defect_wasted_eur": ("defect_v", "leur", "defect__seen"), "defect_wasted_hours": ("defect_w", "lh", "defect__seen"),
    "false_positive_eur": ("fp_v", "leur", "fp__seen"), "false_positive_hours": ("fp_w", "lh", "fp__seen")}


def _cost_frame(frames: RangeFrames, usage: pl.DataFrame, d: dict[str, int]) -> pl.DataFrame:
    key = ["h", "workload", "pool", "model"]
    u = usage.group_by(key).agg(_usage_sums(usage))
    models = usage.select("h", "workload", "pool", "model").unique(["h", "workload", "pool"], keep="last")
    losses = (frames.losses.join(models, on=["h", "workload", "pool"], how="left")
              .with_columns(pl.col("model").fill_null("reclaimable")))
    lo = losses.group_by(key).agg(_loss_sums(losses))
    f = (pl.concat([u.select(key), lo.select(key)]).unique().join(u, on=key, how="left").join(lo, on=key, how="left")
         .with_columns(pl.col(pl.Int128).fill_null(0), pl.col(pl.Boolean).fill_null(False),
                       pl.col("usage_rows").fill_null(0)).sort(key))
    w = d["w"]
    return f.with_columns(*(e for k, (num, den, _) in COST_KEYS.items() for e in _q6(pl.col(num), d[den], f"a_{k}")),
                          *_q6(pl.col("work") * w - pl.col("wasted_v") * 1000, d["cf"], "cf"))


def _cost_rows(f: pl.DataFrame, start: datetime, region: str) -> list[tuple[int, tuple[object, ...]]]:
    out: list[tuple[int, tuple[object, ...]]] = []
    for r in f.iter_rows(named=True):
        attrs: dict[str, Any] = {k: _s6(r[f"a_{k}"], r[f"a_{k}__neg"]) for k, (_, _, seen) in COST_KEYS.items()
                                 if seen is None or r[seen]}
        cost, cf = r["a_cost_eur"], r["cf"]
        hour = (start + timedelta(hours=r["h"])).replace(tzinfo=None)
        hours = r["inst_ms"] / HOUR_MS  # int / int: correctly rounded, as float() of today's Decimal sum
        out.append((r["h"], (hour, region, r["workload"], r["pool"], r["model"], hours, hours,
                             _d6(cost, r["a_cost_eur__neg"]), _d6(cf, r["cf__neg"]), _d6(cf - cost),
                             _d6(r["a_wasted_eur"], r["a_wasted_eur__neg"]), json.dumps(dict(sorted(attrs.items()))))))
    return out
