"""Checks on the contract breaches: every breach has an owner to alert and its ``contract-breach`` event."""

from dagster import AssetCheckResult, asset_check

from orchestration.breach_events import breach_event_id
from orchestration.health import breaches_have_events, latest_breach_time, outbox_has_events
from orchestration.insights import latest_breaches
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource

from .assets import contract_breaches

__all__ = ["CHECKS", "every_breach_is_an_event"]


@asset_check(asset=contract_breaches,
             description="Each workload above its declared interruption tolerance has an owner and its "
                         "contract-breach event in the outbox (the event path to the alert and the showback page).")
def every_breach_is_an_event(clickhouse: ClickHouseResource, postgres: PostgresResource,
                             settings: AnalyticsSettings) -> AssetCheckResult:
    """Every breach of the latest computation has its event in the outbox."""
    at = latest_breach_time(clickhouse)
    breached = {b.workload: b.owner for b in latest_breaches(clickhouse) if b.breach}
    if at is None:
        return AssetCheckResult(passed=False, description="no breaches computed yet")
    expected = {w: str(breach_event_id(settings.region, w, at)) for w in breached}
    ok, message = breaches_have_events(breached, expected, outbox_has_events(postgres, expected.values()))
    return AssetCheckResult(passed=ok, description=message, metadata={"breaches": len(breached)})


CHECKS = [every_breach_is_an_event]
