"""The hourly ledger on polars frames: ``attribution.attribute``, ``orchestrator_shares`` and
``ledger.hour_rows`` computed for every hour and workload of a ``RangeFrames`` at once, exactly.

Each money input (a ``Decimal`` of any length: today's rate-card rates are ``Decimal`` of a float, ~55
places) is split into an exact integer part at a fixed scale and a float remainder below that scale. Every
quantity is then an Int128 numerator over a known denominator (usage hours: ms / 3.6e6) plus a float residual;
it is rounded to the 6th decimal half-even as ``q6`` does from its exact micro-unit floor and fraction. Today's
``Decimal`` code rounds a 28-digit approximation of the same numbers, so the two agree wherever the fraction
is not within ``EPS`` of one half (or the value within ``EPS`` of 0, where the sign of a zero is at stake):
an hour with such a near-tie, or with numbers too large for Int128, is handed to the ``Decimal`` code, so the
lines and rows are identical to today's in every case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_FLOOR, Decimal
from math import gcd
from typing import Any

import polars as pl

from .attribution import LABEL, LINES, LedgerLine, attribute, ledger_costs, net_saving
from .ledger_inputs import LEDGER_COLUMNS, decimal_cost_rows, decimal_lines, hour_inputs
from .range_frames import EXACT, HOUR_MS, RangeFrames

__all__ = ["EPS", "FrameLedger", "attribute_frames"]

I128, F64 = pl.Int128, pl.Float64
LIMIT = 2 ** 125
EPS = 1e-7         # micro-units: far above the float residuals' error and today's 28-digit error, far below 1/2
RATE, WASTED, EUR = 12, 9, 18   # exact decimal places of rates and premiums, wasted seconds, storage and overhead
U_EUR = HOUR_MS * 10 ** RATE    # denominator of ms × rate
L_H = 3600 * 10 ** WASTED       # of wasted seconds as hours
L_EUR = 3600 * 10 ** (WASTED + RATE)
FIELDS = ("instance_hours", "useful_hours", "counterfactual_eur", "gross_saving_eur", *LINES[:5],
          "wasted_hours", "wasted_eur", "defect_wasted_hours", "defect_wasted_eur", "depth_premium_eur",
          "reclaimable_hours", "fallback_hours", "false_positive_hours", "false_positive_eur")

@dataclass(frozen=True)
class FrameLedger:
    lines: list[list[LedgerLine]]                      # per hour, workloads sorted
    ledger_rows: list[tuple[object, ...]]
    cost_rows: list[tuple[object, ...]]
    decimal_hours: tuple[int, ...] = ()                # hours handed whole to the Decimal code
    decimal_items: int = 0                             # lines and rows of other hours computed in Decimal


def _round(num: pl.Expr, residual: pl.Expr | float, den: int | pl.Expr, name: str,
           exact: pl.Expr | bool = False) -> list[pl.Expr]:
    """num / den (+ a float residual in micro-units) rounded to micro-units half-even: ``name``;
    ``name__tie``: not decided here (a half-way tie today's ``Decimal`` may not have computed exactly — ``exact``
    says it did —, or a residual too near a half or 0); ``name__neg``: below zero (``-0.000000`` as ``Decimal``)."""
    if isinstance(den, int):
        g = gcd(10 ** 6, den)
        scaled, div = num.cast(I128) * (10 ** 6 // g), pl.lit(den // g, I128)
    else:
        scaled, div = num.cast(I128) * 10 ** 6, den.cast(I128)
    q = scaled // div
    rem = scaled - q * div
    half = rem * 2 == div
    inexact = ~(exact if isinstance(exact, pl.Expr) else pl.lit(exact))
    micro_exact = q + ((rem * 2 > div) | (half & (q % 2 == 1))).cast(I128)
    if isinstance(residual, float) and residual == 0:
        tie, micro, neg = half & inexact, micro_exact, num < 0
    else:
        res = pl.lit(residual, F64) if isinstance(residual, float) else residual
        p = rem.cast(F64) / div.cast(F64) + res
        t = p.floor()
        base, frac = q + t.cast(I128), p - t
        near = ((frac - 0.5).abs() < EPS) | ((base == 0) & (frac < EPS)) | ((base == -1) & (frac > 1 - EPS))
        with_res = res != 0
        tie = pl.when(with_res).then(near).otherwise(half & inexact)
        micro = pl.when(with_res).then(base + (frac > 0.5).cast(I128)).otherwise(micro_exact)
        neg = pl.when(with_res).then(base < 0).otherwise(num < 0)
    return [micro.alias(name), tie.alias(f"{name}__tie"), neg.alias(f"{name}__neg")]


def _d6(micro: int, neg: bool = False) -> Decimal:
    return Decimal("-0.000000") if micro == 0 and neg else Decimal(micro).scaleb(-6)


def _s6(micro: int, neg: bool) -> str:
    sign = "-" if micro < 0 or (micro == 0 and neg) else ""
    return f"{sign}{abs(micro) // 10 ** 6}.{abs(micro) % 10 ** 6:06d}"


def _split(values: list[str], scale: int) -> tuple[list[int], list[float]]:
    his, los = [], []
    for v in values:
        d = Decimal(v)
        hi = int(d.scaleb(scale, EXACT).to_integral_value(ROUND_FLOOR, EXACT))
        his.append(hi)
        los.append(float(d.fma(1, -Decimal(hi).scaleb(-scale, EXACT), EXACT)))
    return his, los


def _exact(f: pl.DataFrame, col: str, scale: int) -> pl.DataFrame:
    """``col`` (Decimal text) as ``col_hi`` (Int128, × 10^scale, floor) and ``col_lo`` (the rest, float)."""
    values = f[col].unique().to_list()
    his, los = _split(values, scale)
    m = pl.DataFrame({col: values, f"{col}_hi": his, f"{col}_lo": los},
                     schema={col: pl.String, f"{col}_hi": I128, f"{col}_lo": F64})
    return f.join(m, on=col, how="left")


def _short(col: str) -> pl.Expr:
    """At most 6 decimal places: today's products of exact hours and this stay within 28 digits."""
    short: pl.Expr = (pl.col(f"{col}_lo") == 0) & (pl.col(f"{col}_hi") % 10 ** (RATE - 6) == 0)
    return short


def _with_line(usage: pl.DataFrame) -> pl.DataFrame:
    line = (pl.when(pl.col("purpose") == "headroom").then(pl.lit("headroom_eur"))
            .when((pl.col("purpose") == "fallback") | (pl.col("model") == "guaranteed")).then(pl.lit("fallback_eur"))
            .when((pl.col("purpose") == "floor") | (pl.col("model") == "committed")).then(pl.lit("floor_eur"))
            .otherwise(pl.lit("reclaimable_eur")))
    for col in ("rate", "guar", "premium"):
        usage = _exact(usage, col, RATE)
    ms, msf = pl.col("ms").cast(I128), pl.col("ms").cast(F64) / 3.6
    work = pl.col("purpose") != "headroom"
    hx = pl.col("ms") % 9 == 0  # ms / 3.6e6 has a finite decimal expansion: today's Decimal hours are exact
    short = {c: _short(c) for c in ("rate", "guar", "premium")}
    return usage.with_columns(line.alias("line")).with_columns(
        hx.alias("hours_x"), (hx & short["rate"]).alias("cost_x"), (hx & short["premium"]).alias("prem_x"),
        (hx & short["guar"]).alias("work_x"), (hx & short["guar"] & short["rate"]).alias("gross_x"),
        (ms * pl.col("rate_hi")).alias("cost"), (msf * pl.col("rate_lo")).alias("cost_r"),
        (ms * pl.col("premium_hi")).alias("prem"), (msf * pl.col("premium_lo")).alias("prem_r"),
        pl.when(work).then(ms * pl.col("guar_hi")).otherwise(0).alias("work"),
        pl.when(work).then(msf * pl.col("guar_lo")).otherwise(0.0).alias("work_r"),
        pl.when(work).then(ms).otherwise(0).alias("useful_ms"),
        pl.when(pl.col("line") == "reclaimable_eur").then(ms * (pl.col("guar_hi") - pl.col("rate_hi")))
        .otherwise(0).alias("gross"),
        pl.when(pl.col("line") == "reclaimable_eur").then(msf * (pl.col("guar_lo") - pl.col("rate_lo")))
        .otherwise(0.0).alias("gross_r"))


def _with_value(losses: pl.DataFrame) -> pl.DataFrame:
    losses = _exact(_exact(losses, "wasted", WASTED), "guar", RATE)
    w_hi, w_lo, g_hi, g_lo = (pl.col(c) for c in ("wasted_hi", "wasted_lo", "guar_hi", "guar_lo"))
    w_f, g_f = w_hi.cast(F64) / 10 ** WASTED, g_hi.cast(F64) / 10 ** RATE
    wx = (w_lo == 0) & (w_hi % 9 == 0)  # wasted / 3600 is exact in today's Decimal
    return losses.with_columns(wx.alias("w_x"), (wx & _short("guar")).alias("v_x"), (w_hi * g_hi).alias("value"),
                               (w_lo / 3600 * 1e6).alias("wasted_r"),
                               ((w_f * g_lo + w_lo * (g_f + g_lo)) / 3600 * 1e6).alias("value_r"))


def _usage_sums() -> list[pl.Expr]:
    """Per group: each quantity's Int128 sum, its float residual ``_r`` and ``_x`` (today's Decimal is exact)."""
    line, work = pl.col("line"), pl.col("purpose") != "headroom"
    reclaim, fallback = line == "reclaimable_eur", line == "fallback_eur"
    out = [pl.col("ms").cast(I128).sum().alias("inst_ms"), pl.col("hours_x").all().alias("inst_ms_x"),
           pl.col("useful_ms").sum(), pl.col("hours_x").filter(work).all().alias("useful_ms_x"),
           pl.col("ms").filter(reclaim).cast(I128).sum().alias("reclaim_ms"),
           pl.col("hours_x").filter(reclaim).all().alias("reclaim_ms_x"),
           pl.col("ms").filter(fallback).cast(I128).sum().alias("fallback_ms"),
           pl.col("hours_x").filter(fallback).all().alias("fallback_ms_x"),
           pl.col("cost_x").all(), pl.col("prem_x").all(), pl.col("work_x").filter(work).all(),
           pl.col("gross_x").filter(reclaim).all(), reclaim.any().alias("gross__seen"), pl.len().alias("usage_rows")]
    out += [pl.col(c).sum() for c in ("work", "work_r", "cost", "cost_r", "prem", "prem_r", "gross", "gross_r")]
    for ln in LINES[:4]:
        out += [pl.col("cost").filter(line == ln).sum().alias(ln), pl.col("cost_r").filter(line == ln).sum()
                .alias(f"{ln}_r"), pl.col("cost_x").filter(line == ln).all().alias(f"{ln}_x"),
                (line == ln).any().alias(f"{ln}__seen")]
    return out


def _loss_sums() -> list[pl.Expr]:
    defect, fp = pl.col("cause") == "defect", pl.col("cause") == "false-positive"
    out = []
    for name, keep in (("wasted", ~defect), ("defect", defect), ("fp", fp)):
        out += [pl.col("wasted_hi").filter(keep).sum().alias(f"{name}_w"),
                pl.col("wasted_r").filter(keep).sum().alias(f"{name}_w_r"),
                pl.col("w_x").filter(keep).all().alias(f"{name}_w_x"),
                pl.col("value").filter(keep).sum().alias(f"{name}_v"),
                pl.col("value_r").filter(keep).sum().alias(f"{name}_v_r"),
                pl.col("v_x").filter(keep).all().alias(f"{name}_v_x"), keep.any().alias(f"{name}__seen")]
    return out


def _money(col: str, den: int, name: str) -> list[pl.Expr]:
    return _round(pl.col(col), pl.col(f"{col}_r"), den, name, pl.col(f"{col}_x"))


def _hours(col: str, name: str) -> list[pl.Expr]:
    return _round(pl.col(col), 0.0, HOUR_MS, name, pl.col(f"{col}_x"))


def _counterfactual(name: str) -> list[pl.Expr]:
    """Useful work at the guaranteed rate minus reclaim-wasted work (L_EUR = U_EUR × 10^6)."""
    return _round(pl.col("work") * 10 ** 6 - pl.col("wasted_v"), pl.col("work_r") - pl.col("wasted_v_r"), L_EUR,
                  name, pl.col("work_x") & pl.col("wasted_v_x"))


def _fill(f: pl.DataFrame) -> pl.DataFrame:
    return f.with_columns(pl.col(I128).fill_null(0), pl.col(F64).fill_null(0.0), pl.col("^.*_x$").fill_null(True)
                          ).with_columns(pl.col(pl.Boolean).fill_null(False), pl.col("usage_rows").fill_null(0))


def _fits(usage: pl.DataFrame, losses: pl.DataFrame, storage: pl.DataFrame, orch: pl.DataFrame) -> bool:
    """Whether every product below stays inside Int128 (a bound from the largest inputs)."""
    def top(f: pl.DataFrame, expr: pl.Expr) -> int:
        value = f.select(expr.abs().max()).item() if f.height else 0
        return int(value or 0)

    ms_hour = top(usage.group_by("h").agg(pl.col("ms").sum()), pl.col("ms"))
    money = max([top(usage, pl.col(c)) for c in ("rate_hi", "guar_hi", "premium_hi")] + [0])
    wasted = top(losses.group_by("h").agg(pl.col("wasted_hi").abs().sum()), pl.col("wasted_hi"))
    return max(ms_hour * 2 * money * 10 ** 6, wasted * top(losses, pl.col("guar_hi")) * 2,
               top(storage, pl.col("eur_hi")), top(orch, pl.col("eur_hi")) * ms_hour * 10 ** 6) < LIMIT


def _shares(orch: pl.DataFrame, keys: pl.DataFrame, inst: pl.DataFrame) -> pl.DataFrame:
    """``orchestrator_shares`` per hour: pro rata to instance-hours, the remainder to the largest consumer."""
    f = (keys.join(inst, on=["h", "workload"], how="left")
         .with_columns(pl.col("inst_ms").fill_null(0), pl.col("inst_ms_x").fill_null(True))
         .join(orch, on="h", how="left").with_columns(pl.col("eur_hi").fill_null(0), pl.col("eur_lo").fill_null(0.0))
         .with_columns(pl.col("inst_ms").sum().over("h").alias("total_ms")))
    live = (pl.col("total_ms") > 0) & ((pl.col("eur_hi") != 0) | (pl.col("eur_lo") != 0))
    share_r = pl.col("eur_lo") * pl.col("inst_ms").cast(F64) / pl.col("total_ms").cast(F64) * 1e6
    f = f.with_columns(*_round(pl.col("eur_hi") * pl.col("inst_ms"), share_r,
                               pl.lit(10 ** RATE, I128) * pl.col("total_ms"), "share"),
                       *_round(pl.col("eur_hi"), pl.col("eur_lo") * 1e6, 10 ** RATE, "total", True))
    f = f.with_columns(pl.when(live).then(pl.col("share")).otherwise(0).alias("share"),
                       (live & (pl.col("share__tie") | pl.col("total__tie"))).alias("share__tie"))
    f = f.sort("h", "inst_ms", "workload", descending=[False, True, True]).with_columns(
        (pl.int_range(pl.len()).over("h") == 0).alias("biggest"),
        # the largest consumer: equal milliseconds are equal Decimal hours when today's sums are exact
        (live & ((top := pl.col("inst_ms") == pl.col("inst_ms").max().over("h")).sum().over("h") > 1)
         & (top & ~pl.col("inst_ms_x")).any().over("h")).alias("max__tie"))
    remainder = pl.col("total") - pl.col("share").sum().over("h")
    return f.with_columns(pl.when(live & pl.col("biggest")).then(pl.col("share") + remainder)
                          .otherwise(pl.col("share")).alias("orchestrator_eur"),
                          (pl.col("share__tie") | pl.col("max__tie")).alias("orch__tie")
                          ).select("h", "workload", "orchestrator_eur", "orch__tie")


def _ledger(usage: pl.DataFrame, losses: pl.DataFrame, storage: pl.DataFrame, orch: pl.DataFrame) -> pl.DataFrame:
    u = usage.group_by("h", "workload").agg(_usage_sums())
    lo = losses.group_by("h", "workload").agg(_loss_sums())
    keys = pl.concat([u.select("h", "workload"), lo.select("h", "workload"), storage.select("h", "workload")]).unique()
    f = (keys.join(u, on=["h", "workload"], how="left").join(lo, on=["h", "workload"], how="left")
         .join(storage, on=["h", "workload"], how="left")
         .join(_shares(orch, keys, u.select("h", "workload", "inst_ms", "inst_ms_x")), on=["h", "workload"],
                how="left"))
    f = _fill(f).sort("h", "workload")
    return f.with_columns(
        *_hours("inst_ms", "instance_hours"), *_money("gross", U_EUR, "gross_saving_eur"),
        *_round(pl.col("useful_ms") * 10 ** 6 - pl.col("wasted_w"), -pl.col("wasted_w_r"), L_H, "useful_hours",
                pl.col("useful_ms_x") & pl.col("wasted_w_x")),
        *_counterfactual("counterfactual_eur"), *(e for ln in LINES[:4] for e in _money(ln, U_EUR, ln)),
        *_round(pl.col("eur_hi"), pl.col("eur_lo") * 1e6, 10 ** EUR, "storage_eur", True),
        *_money("wasted_w", L_H, "wasted_hours"), *_money("wasted_v", L_EUR, "wasted_eur"),
        *_money("defect_w", L_H, "defect_wasted_hours"), *_money("defect_v", L_EUR, "defect_wasted_eur"),
        *_money("prem", U_EUR, "depth_premium_eur"), *_hours("reclaim_ms", "reclaimable_hours"),
        *_hours("fallback_ms", "fallback_hours"), *_money("fp_w", L_H, "false_positive_hours"),
        *_money("fp_v", L_EUR, "false_positive_eur"))


def _lines(f: pl.DataFrame, start: datetime) -> list[tuple[int, LedgerLine]]:
    out = []
    for r in f.iter_rows(named=True):
        v = {k: _d6(r[k], r[f"{k}__neg"]) for k in FIELDS}
        costs = ledger_costs(r, 0)
        net = net_saving(r["counterfactual_eur"], costs)
        period = (start + timedelta(hours=r["h"])).strftime("%Y-%m-%dT%H:00Z")
        out.append((r["h"], LedgerLine(
            workload=r["workload"], period=period, **v, orchestrator_eur=_d6(r["orchestrator_eur"]),
            costs_eur=_d6(costs), net_saving_eur=_d6(net, costs == 0 and v["counterfactual_eur"].is_signed()),
            label=LABEL)))
    return out


TIE = pl.any_horizontal(pl.col("^.*__tie$"))


def _key(row: tuple[object, ...]) -> tuple[str, str, str]:
    """A cost row's (workload, pool, purchase model): its order in the hour."""
    return str(row[2]), str(row[3]), str(row[4])


def _subset(frames: RangeFrames, h: int, workload: str, pool: str | None = None) -> Any:
    """Hour ``h``'s ``HourInputs`` restricted to one workload (and one pool)."""
    def keep(f: pl.DataFrame) -> pl.DataFrame:
        mask = (pl.col("h") == h) & (pl.col("workload") == workload)
        return f.filter(mask & (pl.col("pool") == pool) if pool is not None else mask).with_columns(
            pl.lit(0, pl.Int64).alias("h"))

    one = RangeFrames(frames.start + timedelta(hours=h), 1, keep(frames.usage), keep(frames.losses),
                      keep(frames.storage) if pool is None else frames.storage.clear(), frames.orch.clear())
    return hour_inputs(one)[0]


def attribute_frames(frames: RangeFrames, region: str) -> FrameLedger:
    """Ledger lines and the ``savings_ledger`` / ``cost_attribution`` rows of every hour of ``frames``. A line or
    row with a near-tie is computed by the ``Decimal`` code from its own inputs; an hour whose orchestrator
    shares have one (or numbers too large for Int128: every hour) goes to the ``Decimal`` code whole."""
    usage, losses = _with_line(frames.usage), _with_value(frames.losses)
    storage, orch = _exact(frames.storage, "eur", EUR), _exact(frames.orch, "eur", RATE)
    lines: list[dict[str, LedgerLine]] = [{} for _ in range(frames.n)]
    rows: list[dict[tuple[str, str, str], tuple[object, ...]]] = [{} for _ in range(frames.n)]
    whole, by_decimal = set(range(frames.n)), 0
    if _fits(usage, losses, storage, orch):
        ledger, costs = _ledger(usage, losses, storage, orch), _cost_frame(usage, losses)
        whole = set(ledger.filter(pl.col("orch__tie"))["h"].to_list())
        ledger, costs = ledger.filter(~pl.col("h").is_in(list(whole))), costs.filter(~pl.col("h").is_in(list(whole)))
        for h, line in _lines(ledger.filter(~TIE), frames.start):
            lines[h][line.workload] = line
        for h, row in _cost_rows(costs.filter(~TIE), frames.start, region):
            rows[h][_key(row)] = row
        for h, workload, share in ledger.filter(TIE).select("h", "workload", "orchestrator_eur").iter_rows():
            inputs = _subset(frames, h, workload)
            lines[h][workload] = attribute(workload, inputs.hour.strftime("%Y-%m-%dT%H:00Z"), inputs.usage,
                                           inputs.losses, inputs.storage_eur.get(workload, Decimal(0)), _d6(share))
        for h, workload, pool in costs.filter(TIE).select("h", "workload", "pool").iter_rows():
            for row in decimal_cost_rows(region, _subset(frames, h, workload, pool)):
                rows[h][_key(row)] = row
        by_decimal = ledger.filter(TIE).height + costs.filter(TIE).height
    for h in sorted(whole):
        inputs = hour_inputs(frames.hour(h))[0]
        lines[h] = {ln.workload: ln for ln in decimal_lines(inputs)}
        rows[h] = {_key(row): row for row in decimal_cost_rows(region, inputs)}
    by_hour = [[hour[w] for w in sorted(hour)] for hour in lines]
    ledger_rows = [((frames.start + timedelta(hours=h)).replace(tzinfo=None),
                    *(getattr(ln, c) for c in LEDGER_COLUMNS[1:])) for h, hour in enumerate(by_hour) for ln in hour]
    cost_rows = [hour[k] for hour in rows for k in sorted(hour)]
    return FrameLedger(by_hour, ledger_rows, cost_rows, tuple(sorted(whole)), by_decimal)


COST_KEYS = {  # attribute key → (numerator column, denominator, presence column or None: always there)
    "instance_hours": ("inst_ms", HOUR_MS, None), "cost_eur": ("cost", U_EUR, None),
    **{ln: (ln, U_EUR, f"{ln}__seen") for ln in LINES[:4]}, "depth_premium_eur": ("prem", U_EUR, "usage_rows"),
    "useful_value_eur": ("work", U_EUR, None), "gross_saving_eur": ("gross", U_EUR, "gross__seen"),
    "wasted_eur": ("wasted_v", L_EUR, None), "wasted_hours": ("wasted_w", L_H, "wasted__seen"),
    "defect_wasted_eur": ("defect_v", L_EUR, "defect__seen"), "defect_wasted_hours": ("defect_w", L_H, "defect__seen"),
    "false_positive_eur": ("fp_v", L_EUR, "fp__seen"), "false_positive_hours": ("fp_w", L_H, "fp__seen")}


def _cost_frame(usage: pl.DataFrame, losses: pl.DataFrame) -> pl.DataFrame:
    key = ["h", "workload", "pool", "model"]
    u = usage.group_by(key).agg(_usage_sums())
    models = usage.select("h", "workload", "pool", "model").unique(["h", "workload", "pool"], keep="last")
    losses = (losses.join(models, on=["h", "workload", "pool"], how="left")
              .with_columns(pl.col("model").fill_null("reclaimable")))
    lo = losses.group_by(key).agg(_loss_sums())
    f = _fill(pl.concat([u.select(key), lo.select(key)]).unique().join(u, on=key, how="left")
              .join(lo, on=key, how="left")).sort(key)
    return f.with_columns(*(e for k, (num, den, _) in COST_KEYS.items()
                            for e in (_hours(num, f"a_{k}") if num.endswith("_ms") else _money(num, den, f"a_{k}"))),
                          *_counterfactual("cf"))


def _cost_rows(f: pl.DataFrame, start: datetime, region: str) -> list[tuple[int, tuple[object, ...]]]:
    out: list[tuple[int, tuple[object, ...]]] = []
    for r in f.iter_rows(named=True):
        attrs: dict[str, Any] = {k: _s6(r[f"a_{k}"], r[f"a_{k}__neg"]) for k, (_, _, seen) in COST_KEYS.items()
                                 if seen is None or r[seen]}
        cost, cf = r["a_cost_eur"], r["cf"]
        hour = (start + timedelta(hours=r["h"])).replace(tzinfo=None)
        hours = r["inst_ms"] / HOUR_MS  # int / int: correctly rounded, as float() of today's Decimal sum
        out.append((r["h"], (hour, region, r["workload"], r["pool"], r["model"], hours, hours,
                             _d6(cost, r["a_cost_eur__neg"]), _d6(cf, r["cf__neg"]), _d6(net_saving(cf, cost)),
                             _d6(r["a_wasted_eur"], r["a_wasted_eur__neg"]), json.dumps(dict(sorted(attrs.items()))))))
    return out
