"""Checks on the ledger finance reads (great-expectations rules in ``orchestration.expectations``)."""

from dagster import AssetCheckResult, asset_check

from orchestration.expectations import ledger_balances, no_negative_hours
from orchestration.readback import HOUR_COLUMNS, ledger_frame
from orchestration.resources import ClickHouseResource

from .assets import savings_attribution

__all__ = ["CHECKS", "ledger_balances_check", "ledger_has_no_negative_hours"]


@asset_check(asset=savings_attribution, description="No negative hours in the ledger finance reads.")
def ledger_has_no_negative_hours(clickhouse: ClickHouseResource) -> AssetCheckResult:
    """No hour column of ``savings_ledger`` is negative."""
    frame = ledger_frame(clickhouse)
    for c in HOUR_COLUMNS:
        frame[c] = frame[c].astype(float)
    ok, message = no_negative_hours(frame, HOUR_COLUMNS, "savings_ledger")
    return AssetCheckResult(passed=ok, description=message, metadata={"rows": len(frame)})


@asset_check(asset=savings_attribution, description="counterfactual − costs = net on every ledger row.")
def ledger_balances_check(clickhouse: ClickHouseResource) -> AssetCheckResult:
    """Every ledger row balances: counterfactual − costs = net, costs = the six lines."""
    ok, message = ledger_balances(ledger_frame(clickhouse))
    return AssetCheckResult(passed=ok, description=message)


CHECKS = [ledger_has_no_negative_hours, ledger_balances_check]
