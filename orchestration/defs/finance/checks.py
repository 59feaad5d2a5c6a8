"""great-expectations suites on the marts finance reads, as asset checks on the dbt assets
(``orchestration.mart_expectations``): row counts against the upstream mart, no nulls, the ledger identity."""

from __future__ import annotations

from dagster import AssetCheckResult, AssetChecksDefinition, AssetCheckSeverity, AssetKey, asset_check

from orchestration.mart_expectations import MARTS, MartSuite, mart_suite, read_mart
from orchestration.resources import ClickHouseResource

__all__ = ["CHECKS"]


def _check(suite: MartSuite) -> AssetChecksDefinition:
    @asset_check(asset=AssetKey(["finance", suite.name]), name=f"{suite.name}_expectations", blocking=False,
                 description=f"great-expectations suite on {suite.name}: row count against its upstream, no nulls "
                             "in keys and money columns, counterfactual − costs = net.")
    def _run(clickhouse: ClickHouseResource) -> AssetCheckResult:
        c = clickhouse.client()
        try:
            frame, expected = read_mart(c, suite)
        finally:
            c.close()
        results = mart_suite(suite, frame, expected)
        failed = [r for r in results if not r.passed]
        return AssetCheckResult(passed=not failed, severity=AssetCheckSeverity.ERROR,
                                description="; ".join(r.message for r in (failed or results)),
                                metadata={"rows": len(frame), **{r.name: r.passed for r in results}})

    return _run


CHECKS = [_check(s) for s in MARTS.values()]
