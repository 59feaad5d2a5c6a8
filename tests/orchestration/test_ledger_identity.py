"""The ledger identity (net saving = counterfactual − costs, costs = the six cost lines) has one definition,
``orchestration.attribution.net_saving`` / ``ledger_costs``: the Decimal attribution, the polars frames and the
Decimal cost rows call it; the test oracle's lines and rows and the dbt marts' rows are checked against it here."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

import pytest

from orchestration.attribution import LINES, LedgerLine, ledger_costs, net_saving
from orchestration.ledger_frames import attribute_frames
from orchestration.ledger_inputs import COST_COLUMNS, LEDGER_COLUMNS
from testkit import ledger_oracle as oracle
from tests.orchestration.test_ledger_frames import START, frames_of, random_raw

D0 = Decimal(0)


def _balances(line: LedgerLine) -> bool:
    fields = asdict(line)
    return (line.costs_eur == ledger_costs(fields, D0)
            and line.net_saving_eur == net_saving(line.counterfactual_eur, line.costs_eur))


def test_the_identity_is_counterfactual_minus_the_six_cost_lines() -> None:
    lines = dict.fromkeys(LINES, Decimal("1.5"))
    assert ledger_costs(lines, D0) == Decimal("9.0")
    assert net_saving(Decimal("10"), ledger_costs(lines, D0)) == Decimal("1.0")
    assert net_saving(10_000_000, 9_000_000) == 1_000_000  # the frames' integer micro-euros


@pytest.mark.parametrize("seed", [0, 7, 19])
def test_the_oracles_lines_and_rows_balance_by_the_identity(seed: int) -> None:
    raw = random_raw(seed)
    hours = oracle.oracle_range(START, raw.n, raw.stop, raw.spans, raw.losses, raw.pools, raw.rates, raw.storage,
                                raw.orch)
    lines = [line for inputs in hours for line in oracle.attribute_hour(inputs)]
    assert lines and all(_balances(line) for line in lines)
    cf, cost, saving = (COST_COLUMNS.index(c) for c in ("counterfactual_eur", "cost_eur", "saving_eur"))
    rows = [row for inputs in hours for row in oracle.hour_rows("r1", inputs, oracle.attribute_hour(inputs))[1]]
    assert rows and all(row[saving] == net_saving(row[cf], row[cost]) for row in rows)


@pytest.mark.parametrize("seed", [0, 7, 19])
def test_the_polars_ledger_rows_balance_by_the_identity(seed: int) -> None:
    got = attribute_frames(frames_of(random_raw(seed)), "r1")
    assert all(_balances(line) for hour in got.lines for line in hour)
    column = {c: i for i, c in enumerate(LEDGER_COLUMNS)}
    for row in got.ledger_rows:
        lines = {k: row[column[k]] for k in LINES}
        assert row[column["costs_eur"]] == ledger_costs(lines, D0)
        assert row[column["net_saving_eur"]] == net_saving(row[column["counterfactual_eur"]],
                                                           row[column["costs_eur"]])
