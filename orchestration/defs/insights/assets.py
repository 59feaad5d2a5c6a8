# mypy: disable-error-code="type-arg"
"""Advisory precision (ADR-16), contract breaches (ADR-27, ADR-28) and recommendations (ADR-26); the rules
and their SQL live in ``orchestration.insights``."""

from dagster import MaterializeResult, asset

from orchestration import breach_events, insights
from orchestration.defs.attribution.assets import savings_attribution
from orchestration.defs.catalogue.assets import pool_catalogue
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource

__all__ = ["ASSETS", "advisory_precision", "contract_breaches", "recommendations"]


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Per pool over 30 days: share of advisories followed by a reclaim, and of reclaims that were "
                   "advised (ADR-16).")
def advisory_precision(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> MaterializeResult:
    """Per pool, the share of advisories a reclaim followed, over 30 days."""
    rows = insights.advisory_precision(clickhouse, settings.region, settings.data_now(clickhouse))
    total, ok = sum(int(r[3]) for r in rows), sum(int(r[4]) for r in rows)  # type: ignore[call-overload]
    return MaterializeResult(metadata={"pools": len(rows), "advisories": total,
                                       "precision": round(ok / total, 4) if total else 0.0})


@asset(group_name="analytics", deps=[savings_attribution],
       description="Measured interruption rate per workload against its declared tolerance; each breach is a "
                   "contract-breach event (outbox -> JetStream -> ClickHouse) that alarms the owner; a breach never "
                   "changes a contract (ADR-27, ADR-28).")
def contract_breaches(clickhouse: ClickHouseResource, postgres: PostgresResource,
                      settings: AnalyticsSettings) -> MaterializeResult:
    """Each workload's measured interruption rate against its contract; breaches queued as events."""
    postgres.migrate()
    now = settings.data_now(clickhouse)
    found = insights.breaches(clickhouse, postgres, settings.region, now)
    events = breach_events.breach_events(found, settings.region, now)
    new = breach_events.enqueue_breach_events(postgres, events)
    return MaterializeResult(metadata={"workloads": len(found), "breaches": len(events),
                                       "breached": ", ".join(e.workload or "" for e in events) or "-",
                                       "events_enqueued": new,
                                       "event_ids": ", ".join(str(e.event_id) for e in events) or "-"})


@asset(group_name="analytics", deps=[contract_breaches, savings_attribution],
       description="Move work off reclaimable capacity when the saving does not justify the risk; onto it when "
                   "work behaves as if it could tolerate interruption.")
def recommendations(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> MaterializeResult:
    """Per workload: move off reclaimable capacity, onto it, or stay."""
    now = settings.data_now(clickhouse)
    recs = insights.recommendations(clickhouse, now, insights.latest_breaches(clickhouse))
    return MaterializeResult(metadata={d: sum(r.direction == d for r in recs)
                                       for d in ("off-reclaimable", "onto-reclaimable", "stay")})


ASSETS = [advisory_precision, contract_breaches, recommendations]
