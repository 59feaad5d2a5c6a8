# mypy: disable-error-code="type-arg"
"""The ranking asset: score every active pool, keep the ranking with its inputs in ClickHouse and publish
it to PostgreSQL as the ranking in force (ADR-07). Drill events are excluded (``orchestration.rankings``)."""

from dagster import MaterializeResult, MetadataValue, asset

from orchestration import groups, rankings
from orchestration.defs.catalogue.assets import pool_catalogue
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource, ProviderFeedResource

__all__ = ["pool_rankings"]


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Every 5 minutes: composite score per pool, kept with its inputs in ClickHouse and published "
                   "to PostgreSQL as the ranking in force (ADR-07). Drill events are excluded.")
def pool_rankings(clickhouse: ClickHouseResource, postgres: PostgresResource, settings: AnalyticsSettings,
                  provider: ProviderFeedResource) -> MaterializeResult:
    """Score and rank every pool, keep the ranking with its inputs and publish it in force."""
    postgres.migrate()
    now = settings.data_now(clickhouse)
    excluded = rankings.excluded_pools(postgres, settings.region, now)
    ranked = rankings.rank(clickhouse, settings.region, now, settings.interruption_window_days,
                           quota_headroom=provider.quota_headroom(), forward_free=provider.forward_free(),
                           full=rankings.full_since(excluded))
    in_force = groups.groups_in_force(postgres, settings.region)
    rankings.write_rankings(clickhouse, settings.region, now, ranked, excluded, in_force)
    rankings.publish_in_force(postgres, settings.region, now, ranked)
    return MaterializeResult(metadata={
        # the freshness check measures the data: a ranking recomputed on a history the ingest no longer feeds
        # is as old as its newest event
        "dagster/last_updated_timestamp": MetadataValue.timestamp(now),
        "ranked_at": now.isoformat(), "pools": len(ranked), "excluded": len(excluded),
        "top": MetadataValue.md("\n".join(f"{r.rank}. {r.pool} {r.score:.3f}" for r in ranked[:5]))})
