"""The polars ledger (``range_frames`` + ``ledger_frames``) gives the same ledger lines and the same
``savings_ledger`` / ``cost_attribution`` rows as today's ``Decimal`` code (``ledger_oracle``) over seeded random
hours: several workloads, pools and purchase models, purposes, depth premiums, rate cards, losses of every
cause, storage, orchestrator shares, and the edge cases (no hours, one instance, empty hours, rounding ties)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import polars as pl
import pytest

from orchestration.ledger_frames import FrameLedger, attribute_frames
from orchestration.ledger_inputs import LEDGER_COLUMNS, hour_inputs
from orchestration.range_frames import HOUR_MS, LOSSES, SPANS, build_frames
from testkit import ledger_oracle as oracle

START = datetime(2026, 10, 1, tzinfo=UTC)
S_MS = (START - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
D = Decimal


@dataclass(frozen=True)
class Pool:
    purchase_model: str
    rate_eur_h: Decimal
    guaranteed_rate_eur_h: Decimal


@dataclass
class Raw:
    n: int
    stop: datetime
    spans: list[tuple[str, str, str, int, int]]
    losses: list[tuple[str, str, str, str, int]]
    pools: dict[str, Pool]
    rates: dict[tuple[str, int], tuple[Decimal, Decimal]]
    storage: list[tuple[int, str, Decimal]]
    orch: list[tuple[int, Decimal]]


def _money(rng: random.Random, places: int, top: int) -> Decimal:
    return D(rng.randrange(0, top * 10 ** places)).scaleb(-places)


def random_raw(seed: int) -> Raw:
    rng = random.Random(seed)
    n = rng.choice([1, 1, 2, 3, 5])
    models = ["reclaimable", "committed", "guaranteed"]
    pools = {f"p{k}": Pool(models[k % 3] if rng.random() < 0.8 else "reclaimable",
                           rng.choice([D("0.6"), D("0.12"), _money(rng, rng.choice([2, 4]), 2)]),
                           rng.choice([D("0.36"), _money(rng, rng.choice([2, 3, 4]), 3)]))
             for k in range(rng.randint(1, 6))}
    workloads = [f"w{k}" for k in range(rng.randint(1, 7))]
    # rate cards: ClickHouse's avg() is a Float64, so today's rates are Decimal(float), ~55 decimal places
    rates = {(p, h): (D(rng.random() * 2), D(float(_money(rng, 4, 3)))) for p in pools for h in range(n)
             if rng.random() < 0.3}
    spans = []
    for _ in range(rng.choice([1, 3, 20, 200])):
        attrs: dict[str, Any] = {}
        if rng.random() < 0.7:
            attrs["purpose"] = rng.choice(["work", "work", "floor", "fallback", "headroom", ""])
        if rng.random() < 0.3:
            attrs["depth_premium_eur_h"] = rng.choice([0.01, "0.0125", 0.1, "0.10", 0, None, "x"])
        t0 = S_MS + rng.randint(-2 * HOUR_MS, n * HOUR_MS)
        t1 = t0 + rng.choice([rng.randint(0, 3 * HOUR_MS), 21, 15, rng.randint(-5, 5_000)])
        spans.append((rng.choice(workloads), rng.choice(list(pools)), json.dumps(attrs), t0, t1))
    causes = ["reclaimed", "workload-defect:oom", "advisory-false-positive", "lost"]
    wasted = [rng.randint(0, 3600), rng.random() * 900, "12.5", 0, 1.5e-7, 9, 4.5]
    losses = sorted(((rng.choice([*workloads, "only-loss"]), rng.choice([*pools, "gone"]), rng.choice(causes),
                      json.dumps({"wasted_s": rng.choice(wasted)}),
                      S_MS + rng.randint(0, n * HOUR_MS - 1)) for _ in range(rng.choice([0, 2, 15]))),
                    key=lambda r: r[4])
    storage = [(h, w, _money(rng, 15, 1)) for h in range(n) for w in [*workloads, "only-storage"] if rng.random() < 0.5]
    orch = [(h, rng.choice([D(0), _money(rng, 6, 5), D("1.00")])) for h in range(n) if rng.random() < 0.8]
    stop = START + timedelta(hours=n) - (timedelta(minutes=rng.randint(1, 59)) if rng.random() < 0.2 else timedelta())
    return Raw(n, stop, spans, losses, pools, rates, storage, orch)


def frames_of(raw: Raw) -> Any:
    spans = pl.DataFrame(raw.spans, orient="row", schema=SPANS)
    losses = pl.DataFrame(raw.losses, orient="row", schema=LOSSES)
    return build_frames(START, raw.n, raw.stop, spans, losses, raw.pools, raw.rates, raw.storage, raw.orch)


def reference(raw: Raw, region: str) -> tuple[list[list[Any]], list[tuple[object, ...]], list[tuple[object, ...]]]:
    hours = oracle.oracle_range(START, raw.n, raw.stop, raw.spans, raw.losses, raw.pools, raw.rates, raw.storage,
                                raw.orch)
    lines, ledger_rows, cost_rows = [], [], []
    for inputs in hours:
        hour_lines = oracle.attribute_hour(inputs)
        a, b = oracle.hour_rows(region, inputs, hour_lines)
        lines.append(hour_lines)
        ledger_rows += a
        cost_rows += b
    return lines, ledger_rows, cost_rows


def assert_identical(raw: Raw) -> FrameLedger:
    got = attribute_frames(frames_of(raw), "r1")
    lines, ledger_rows, cost_rows = reference(raw, "r1")
    assert got.lines == lines
    assert got.ledger_rows == ledger_rows
    assert got.cost_rows == cost_rows  # the attributes JSON compared as text
    return got


@pytest.mark.parametrize("seed", range(60))
def test_the_polars_ledger_equals_todays_decimal_ledger_on_seeded_random_hours(seed: int) -> None:
    assert_identical(random_raw(seed))


def test_the_hour_inputs_rebuilt_from_the_frames_equal_todays_usage_and_losses() -> None:
    raw = random_raw(3)
    rebuilt = hour_inputs(frames_of(raw))
    expected = oracle.oracle_range(START, raw.n, raw.stop, raw.spans, raw.losses, raw.pools, raw.rates,
                                   raw.storage, raw.orch)
    assert [(h.usage, h.losses, h.storage_eur, h.orchestrator_eur) for h in rebuilt] == \
        [(h.usage, h.losses, h.storage_eur, h.orchestrator_eur) for h in expected]
    assert any(h.usage for h in rebuilt) and any(h.losses for h in rebuilt)


def bare(n: int = 1, spans: list[tuple[str, str, str, int, int]] | None = None, rate: str = "0.6",
         orch: list[tuple[int, Decimal]] | None = None) -> Raw:
    return Raw(n, START + timedelta(hours=n), spans or [], [], {"p": Pool("reclaimable", D(rate), D("0.9"))}, {},
               [], orch or [])


def test_no_hours_give_no_lines_and_no_rows() -> None:
    got = assert_identical(bare(0, [("w", "p", "{}", S_MS, S_MS + 10)]))
    assert got.lines == [] and got.ledger_rows == [] and got.cost_rows == []


def test_one_instance_for_the_whole_hour_is_one_line_of_one_hour() -> None:
    got = assert_identical(bare(1, [("w", "p", "{}", S_MS - 5, S_MS + 2 * HOUR_MS)], orch=[(0, D("0.05"))]))
    (line,) = got.lines[0]
    assert line.instance_hours == 1 and line.reclaimable_eur == D("0.6") and line.orchestrator_eur == D("0.05")
    assert got.decimal_hours == ()


def test_an_exact_rounding_tie_is_rounded_as_todays_decimal_code_rounds_it() -> None:
    # 51 ms at 0.6 EUR/h is exactly 8.5 micro-euros: exact half-even says 8, today's Decimal (51 / 3.6e6 to 28
    # digits, times 0.6, to 28 digits) lands just above the half and says 9 — the line goes to the Decimal code
    got = assert_identical(bare(1, [("w", "p", "{}", S_MS, S_MS + 51)]))
    assert got.decimal_items == 2 and got.decimal_hours == ()  # the ledger line and the cost row
    assert got.lines[0][0].reclaimable_eur == D("0.000009")


def test_an_exact_tie_todays_decimal_computes_exactly_is_rounded_half_even_on_the_frames() -> None:
    # 27 ms: 27 / 3.6e6 h = 0.0000075 exactly (half-even 0.000008); at 0.2 EUR/h 1.5 micro-euros (0.000002)
    got = assert_identical(bare(1, [("w", "p", "{}", S_MS, S_MS + 27)], rate="0.2"))
    (line,) = got.lines[0]
    assert got.decimal_items == 0 and line.instance_hours == D("0.000008") and line.reclaimable_eur == D("0.000002")


def test_orchestrator_shares_add_up_and_the_remainder_goes_to_the_largest_consumer() -> None:
    spans = [(w, "p", "{}", S_MS, S_MS + HOUR_MS) for w in ("a", "b", "c")]
    spans.append(("c", "p", "{}", S_MS, S_MS + 7))
    got = assert_identical(bare(1, spans, orch=[(0, D("1.00"))]))
    shares = {ln.workload: ln.orchestrator_eur for ln in got.lines[0]}
    assert sum(shares.values()) == D("1.00") and shares["c"] == D("0.333334")


def test_the_ledger_rows_carry_every_ledger_column_in_order() -> None:
    got = assert_identical(random_raw(11))
    assert all(len(r) == len(LEDGER_COLUMNS) for r in got.ledger_rows) and got.ledger_rows


def test_equal_largest_consumers_with_exact_hours_keep_the_shares_on_the_frames() -> None:
    # two workloads with the same whole hours: today's Decimal hours are equal too, the name decides
    spans = [(w, "p", "{}", S_MS - HOUR_MS, S_MS + 2 * HOUR_MS) for w in ("a", "b", "c")]
    got = assert_identical(bare(1, spans, orch=[(0, D("1.00"))]))
    assert got.decimal_hours == () and got.lines[0][2].orchestrator_eur == D("0.333334")
