# mypy: disable-error-code="type-arg, unused-ignore"
"""The analytics assets (DESIGN §2): catalogue, rankings every five minutes, co-reclamation groups daily,
advisory precision, contract breaches, recommendations, hourly savings attribution and the monthly archive."""

import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    HourlyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    MonthlyPartitionsDefinition,
    asset,
)

from contracts.pools import PoolCatalogue
from contracts.provider import RateCard

from . import archive, backfill, groups, insights, rankings
from .catalogue import load_catalogue, write_catalogue
from .resources import AnalyticsSettings, ClickHouseResource, PostgresResource, ProviderFeedResource
from .store import latest_event_time

__all__ = ["ALL_ASSETS", "HOURLY", "MONTHLY"]

HOURLY = HourlyPartitionsDefinition(start_date="2026-01-01-00:00", timezone="UTC")
MONTHLY = MonthlyPartitionsDefinition(start_date="2026-01-01", timezone="UTC")


def _now(ch: ClickHouseResource, settings: AnalyticsSettings) -> datetime:
    return settings.now(latest_event_time(ch, settings.region))


@asset(group_name="analytics", description="Pools, aggregates and halls from the provider (ADR-06).")
def pool_catalogue(clickhouse: ClickHouseResource, settings: AnalyticsSettings,
                   provider: ProviderFeedResource) -> MaterializeResult:
    clickhouse.migrate()
    if provider.base_url:
        body = provider.document("/v1/catalogue")
        # the provider contract's feed serves the pools as a list (controllers.providers.SimulatedProvider)
        catalogue = PoolCatalogue.model_validate({"pools": body} if isinstance(body, list) else body)
        card = RateCard.model_validate(provider.document("/v1/rate-card"))
        write_catalogue(clickhouse, [p for p in catalogue.pools if p.region == settings.region], card.time)
        clickhouse.insert("rate_cards", [
            (card.time, card.region, e.pool_id, e.rate_eur_h, e.guaranteed_rate_eur_h, e.utilisation,
             e.free_instances, 0, e.free_instances, "feed") for e in card.entries],
            ("time", "region", "pool", "rate_eur_h", "guaranteed_rate_eur_h", "utilisation", "free_instances",
             "instances", "capacity", "source"))
    pools = load_catalogue(clickhouse, settings.region)
    if not pools:
        raise ValueError(f"no pools for region {settings.region} in ClickHouse: configure provider.base_url or "
                         "load a pool history (`sco sim history`)")
    by_model: dict[str, int] = {}
    for p in pools:
        by_model[p.purchase_model] = by_model.get(p.purchase_model, 0) + 1
    return MaterializeResult(metadata={"pools": len(pools), **{f"pools_{k}": v for k, v in by_model.items()},
                                       "aggregates": len({p.aggregate for p in pools}),
                                       "halls": len({p.hall for p in pools})})


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Every 5 minutes: composite score per pool, kept with its inputs in ClickHouse and published "
                   "to PostgreSQL as the ranking in force (ADR-07). Drill events are excluded.")
def pool_rankings(clickhouse: ClickHouseResource, postgres: PostgresResource, settings: AnalyticsSettings,
                  provider: ProviderFeedResource) -> MaterializeResult:
    postgres.migrate()
    now = _now(clickhouse, settings)
    ranked = rankings.rank(clickhouse, settings.region, now, settings.interruption_window_days,
                           quota_headroom=provider.quota_headroom())
    excluded = rankings.excluded_pools(postgres, settings.region, now)
    with postgres.connection() as conn:
        grp = {str(p): str(g) for p, g in conn.execute(
            "SELECT pool, group_id FROM correlation_groups WHERE region = %s", (settings.region,)).fetchall()}
    rankings.write_rankings(clickhouse, settings.region, now, ranked, excluded, grp)
    rankings.publish_in_force(postgres, settings.region, now, ranked)
    return MaterializeResult(metadata={
        "ranked_at": now.isoformat(), "pools": len(ranked), "excluded": len(excluded),
        "top": MetadataValue.md("\n".join(f"{r.rank}. {r.pool} {r.score:.3f}" for r in ranked[:5]))})


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Daily: topology groups refined by phi over 90 days of 10-minute reclaim windows; splits and "
                   "merges kept with their evidence; published in force (ADR-06).")
def correlation_groups(clickhouse: ClickHouseResource, postgres: PostgresResource,
                       settings: AnalyticsSettings) -> MaterializeResult:
    postgres.migrate()
    now = _now(clickhouse, settings)
    pools = load_catalogue(clickhouse, settings.region, "reclaimable")
    topology = {p.pool: p.aggregate for p in pools}
    found = groups.compute_groups(clickhouse, settings.region, now, settings.phi_window_days, topology=topology)
    groups.write_groups(clickhouse, settings.region, now, found, topology)
    groups.publish_groups(postgres, settings.region, now, found)
    return MaterializeResult(metadata={"groups": len(set(found.group_of.values())), "pools": len(found.group_of),
                                       "merges": sum(c.kind == "merge" for c in found.changes),
                                       "splits": sum(c.kind == "split" for c in found.changes)})


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Per pool over 30 days: share of advisories followed by a reclaim, and of reclaims that were "
                   "advised (ADR-16).")
def advisory_precision(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> MaterializeResult:
    rows = insights.advisory_precision(clickhouse, settings.region, _now(clickhouse, settings))
    total, ok = sum(int(r[3]) for r in rows), sum(int(r[4]) for r in rows)  # type: ignore[call-overload]
    return MaterializeResult(metadata={"pools": len(rows), "advisories": total,
                                       "precision": round(ok / total, 4) if total else 0.0})


with warnings.catch_warnings():  # backfill_policy is a beta parameter in dagster 1.13
    warnings.simplefilter("ignore")
    _hourly_single_run = asset(
        group_name="analytics", partitions_def=HOURLY, backfill_policy=BackfillPolicy.single_run(),
        deps=[pool_catalogue],
        description="Hourly per workload: useful work at the guaranteed rate minus every cost; labelled "
                    "'rate-card saving' (ADR-26). A backfill of many hours runs as one run.")


@_hourly_single_run
def savings_attribution(context: AssetExecutionContext, clickhouse: ClickHouseResource,
                        settings: AnalyticsSettings) -> MaterializeResult:
    window = context.partition_time_window
    start, end = window.start.astimezone(UTC), window.end.astimezone(UTC)
    lines = backfill.attribute_range(clickhouse, settings.region, start, end)
    return MaterializeResult(metadata={
        "hours": int((end - start) / timedelta(hours=1)), "workloads": len({ln.workload for ln in lines}),
        "net_saving_eur": round(float(sum(ln.net_saving_eur for ln in lines)), 2), "label": "rate-card saving"})


@asset(group_name="analytics", deps=[savings_attribution],
       description="Measured interruption rate per workload against its declared tolerance; breaches alarm the "
                   "owner and never change a contract (ADR-27, ADR-28).")
def contract_breaches(clickhouse: ClickHouseResource, postgres: PostgresResource,
                      settings: AnalyticsSettings) -> MaterializeResult:
    postgres.migrate()
    found = insights.breaches(clickhouse, postgres, settings.region, _now(clickhouse, settings))
    breached = [b.workload for b in found if b.breach]
    return MaterializeResult(metadata={"workloads": len(found), "breaches": len(breached),
                                       "breached": ", ".join(breached) or "-"})


@asset(group_name="analytics", deps=[contract_breaches, savings_attribution],
       description="Move work off reclaimable capacity when the saving does not justify the risk; onto it when "
                   "work behaves as if it could tolerate interruption.")
def recommendations(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> MaterializeResult:
    now = _now(clickhouse, settings)
    recs = insights.recommendations(clickhouse, now, insights.latest_breaches(clickhouse))
    return MaterializeResult(metadata={d: sum(r.direction == d for r in recs)
                                       for d in ("off-reclaimable", "onto-reclaimable", "stay")})


@asset(group_name="analytics", partitions_def=MONTHLY, deps=[savings_attribution],
       description="Monthly Parquet export of cost attribution for finance (Object Lock in production, a local "
                   "read-only directory in the demo).")
def cost_archive(context: AssetExecutionContext, clickhouse: ClickHouseResource,
                 settings: AnalyticsSettings) -> MaterializeResult:
    month = context.partition_time_window.start.astimezone(UTC)
    manifest = archive.archive_month(clickhouse, month, Path(settings.archive_dir), settings.region)
    return MaterializeResult(metadata={"directory": str(Path(settings.archive_dir) / settings.region /
                                                        month.strftime("%Y-%m")),
                                       "files": MetadataValue.json(dict(manifest["files"]))})  # type: ignore[call-overload]


ALL_ASSETS = [pool_catalogue, pool_rankings, correlation_groups, advisory_precision, savings_attribution,
              contract_breaches, recommendations, cost_archive]
