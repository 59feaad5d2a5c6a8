"""great-expectations suites on the marts finance reads, as asset checks on the dbt assets
(``orchestration.mart_expectations``): row counts against the upstream mart, no nulls, the ledger identity."""

from __future__ import annotations

from dagster import AssetCheckResult, AssetChecksDefinition, AssetCheckSeverity, AssetKey, asset_check

from orchestration.mart_expectations import MARTS, MartSuite, mart_suite
from orchestration.resources import ClickHouseResource

__all__ = ["CHECKS", "UPSTREAM_ROWS"]

# the row count each mart's upstream implies: a month of showback per (month, workload) of the ledger, an export
# row per showback row; the ledger's upstream is the hourly attribution (None: not checked)
UPSTREAM_ROWS = {
    "fct_savings_ledger": None,
    "fct_showback_monthly": "SELECT count() FROM (SELECT DISTINCT toStartOfMonth(hour), workload "
                            "FROM fct_savings_ledger)",
    "fct_finance_export": "SELECT count() FROM fct_showback_monthly",
}


def _check(suite: MartSuite) -> AssetChecksDefinition:
    @asset_check(asset=AssetKey(["finance", suite.name]), name=f"{suite.name}_expectations", blocking=False,
                 description=f"great-expectations suite on {suite.name}: row count against its upstream, no nulls "
                             "in keys and money columns, counterfactual − costs = net.")
    def _run(clickhouse: ClickHouseResource) -> AssetCheckResult:
        import pandas as pd

        c = clickhouse.client()
        try:
            frame = c.query_df(f"SELECT * FROM {suite.name}")
            upstream = UPSTREAM_ROWS[suite.name]
            expected = int(c.query(upstream).result_rows[0][0]) if upstream else None
        finally:
            c.close()
        results = mart_suite(suite, pd.DataFrame(frame), expected)
        failed = [r for r in results if not r.passed]
        return AssetCheckResult(passed=not failed, severity=AssetCheckSeverity.ERROR,
                                description="; ".join(r.message for r in (failed or results)),
                                metadata={"rows": len(frame), **{r.name: r.passed for r in results}})

    return _run


CHECKS = [_check(s) for s in MARTS.values()]
