# mypy: disable-error-code="attr-defined"
"""The great-expectations suites on the marts finance reads (``fct_savings_ledger``, ``fct_showback_monthly``,
``fct_finance_export``): row counts against their upstream, no nulls where finance joins or sums, and the ledger
identity (counterfactual − costs = net). Pure: frames in, verdicts out; the asset checks read the frames.

The marts' own dbt tests check each model alone; these suites check what a reader of the three relies on together
(a month of showback is the ledger's hours summed, the export has one row per showback row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .expectations import ledger_balances, validate

__all__ = ["MARTS", "UPSTREAM_ROWS", "Expectation", "MartSuite", "mart_suite", "read_mart"]


@dataclass(frozen=True)
class MartSuite:
    """What one mart must hold: its key columns (never null), its money columns (never null) and whether every
    cost line is in it (then costs = the sum of the lines is checked beside net = counterfactual − costs)."""

    name: str
    keys: tuple[str, ...]
    money: tuple[str, ...]
    all_cost_lines: bool


_LINES = ("reclaimable_eur", "floor_eur", "fallback_eur", "headroom_eur", "storage_eur", "orchestrator_eur")
MARTS = {
    "fct_savings_ledger": MartSuite("fct_savings_ledger", ("hour", "workload"),
                                    ("counterfactual_eur", "costs_eur", "net_saving_eur", *_LINES), True),
    "fct_showback_monthly": MartSuite("fct_showback_monthly", ("month", "workload"),
                                      ("counterfactual_eur", "costs_eur", "net_saving_eur", *_LINES), True),
    "fct_finance_export": MartSuite("fct_finance_export", ("month", "workload"),
                                    ("counterfactual_eur", "costs_eur", "net_saving_eur"), False),
}


# the row count each mart's upstream implies: a month of showback per (month, workload) of the ledger, an export
# row per showback row; the ledger's upstream is the hourly attribution (None: not checked)
UPSTREAM_ROWS: dict[str, str | None] = {
    "fct_savings_ledger": None,
    "fct_showback_monthly": "SELECT count() FROM (SELECT DISTINCT toStartOfMonth(hour), workload "
                            "FROM fct_savings_ledger)",
    "fct_finance_export": "SELECT count() FROM fct_showback_monthly",
}


def read_mart(client: Any, suite: MartSuite) -> tuple[Any, int | None]:
    """The whole mart as a pandas frame and the row count its upstream implies (a clickhouse-connect client)."""
    import pandas as pd

    frame = pd.DataFrame(client.query_df(f"SELECT * FROM {suite.name}"))
    upstream = UPSTREAM_ROWS[suite.name]
    return frame, (int(client.query(upstream).result_rows[0][0]) if upstream else None)


@dataclass(frozen=True)
class Expectation:
    """One expectation's verdict: its name, whether it held and a message naming what failed and the fix."""

    name: str
    passed: bool
    message: str


def mart_suite(suite: MartSuite, frame: Any, expected_rows: int | None) -> list[Expectation]:
    """Run ``suite`` on ``frame`` (the whole mart as pandas). ``expected_rows``: the row count the upstream
    implies (None: not checked, for the ledger whose upstream is the hourly attribution)."""
    from great_expectations import expectations as gxe

    out: list[Expectation] = []
    if expected_rows is not None:
        r = validate(frame, gxe.ExpectTableRowCountToEqual(value=expected_rows))
        out.append(Expectation("row_count", bool(r.success),
                               f"{len(frame)} rows, {expected_rows} expected from the upstream mart"
                               + ("" if r.success else f" — rebuild {suite.name} (dbt build --select "
                                                       f"{suite.name}+) after its upstream")))
    out.append(_not_null(frame, (*suite.keys, *suite.money), suite.name))
    if len(frame):
        ok, message = _identity(frame, suite)
        out.append(Expectation("ledger_identity", ok, message))
    else:
        out.append(Expectation("ledger_identity", True, "no rows: nothing to balance"))
    return out


def _not_null(frame: Any, columns: Sequence[str], name: str) -> Expectation:
    from great_expectations import expectations as gxe

    bad = []
    for column in columns:
        r = validate(frame, gxe.ExpectColumnValuesToNotBeNull(column=column))
        if not r.success:
            bad.append(f"{column} ({r.result.get('unexpected_count')} null)")
    if not bad:
        return Expectation("not_null", True, f"no nulls in {len(columns)} key and money columns of {name}")
    return Expectation("not_null", False, f"nulls in {name}: {', '.join(bad)} — a join lost its match; rebuild "
                                          "the mart and check the upstream hour")


def _identity(frame: Any, suite: MartSuite, tolerance: float = 1e-6) -> tuple[bool, str]:
    f = frame.copy()
    if "hour" not in f.columns:  # the messages name each bad row by workload and period
        f["hour"] = f["month"]
    if suite.all_cost_lines:
        return ledger_balances(f)
    from great_expectations import expectations as gxe

    # the export carries the total cost only: net = counterfactual − costs is what it can show
    f["imbalance"] = (f["counterfactual_eur"] - f["costs_eur"] - f["net_saving_eur"]).astype(float)
    r = validate(f, gxe.ExpectColumnValuesToBeBetween(column="imbalance", min_value=-tolerance, max_value=tolerance))
    if r.success:
        return True, f"{len(f)} {suite.name} rows balance: counterfactual − costs = net"
    rows = f[f["imbalance"].abs() > tolerance][["workload", "hour", "imbalance"]].head(5)
    return False, (f"{suite.name} does not balance in {r.result.get('unexpected_count')} row(s): "
                   + ", ".join(f"{w}@{h}: {v:+.6f}" for w, h, v in rows.itertuples(index=False))
                   + " — rebuild it from fct_showback_monthly")
