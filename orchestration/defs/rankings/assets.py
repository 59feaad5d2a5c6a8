# mypy: disable-error-code="type-arg"
"""The ranking asset: score every active pool, keep the ranking with its inputs in ClickHouse and publish
it to PostgreSQL as the ranking in force (ADR-07). Drill events are excluded (``orchestration.rankings``)."""

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from dagster import MaterializeResult, MetadataValue, asset, get_dagster_logger

from orchestration import groups, rankings
from orchestration.defs.catalogue.assets import pool_catalogue
from orchestration.forecast import history, model
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource, ProviderFeedResource

__all__ = ["forecast_in_force", "model_path", "pool_rankings"]


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Every 5 minutes: composite score per pool, kept with its inputs in ClickHouse and published "
                   "to PostgreSQL as the ranking in force (ADR-07). Drill events are excluded.")
def pool_rankings(clickhouse: ClickHouseResource, postgres: PostgresResource, settings: AnalyticsSettings,
                  provider: ProviderFeedResource) -> MaterializeResult:
    """Score and rank every pool, keep the ranking with its inputs and publish it in force."""
    postgres.migrate()
    now = settings.data_now(clickhouse)
    excluded = rankings.excluded_pools(postgres, settings.region, now)
    ahead = provider.forward_free()
    ranked = rankings.rank(clickhouse, settings.region, now, settings.interruption_window_days,
                           quota_headroom=provider.quota_headroom(), forward_free=ahead,
                           full=rankings.full_since(excluded))
    in_force = groups.groups_in_force(postgres, settings.region)
    forecast, version = forecast_in_force(clickhouse, postgres, settings, now, ahead, in_force)
    rankings.write_rankings(clickhouse, settings.region, now, ranked, excluded, in_force, forecast)
    rankings.publish_in_force(postgres, settings.region, now, ranked, forecast)
    return MaterializeResult(metadata={
        "model_version": version or "none: no model fitted yet",
        # the freshness check measures the data: a ranking recomputed on a history the ingest no longer feeds
        # is as old as its newest event
        "dagster/last_updated_timestamp": MetadataValue.timestamp(now),
        "ranked_at": now.isoformat(), "pools": len(ranked), "excluded": len(excluded),
        "top": MetadataValue.md("\n".join(f"{r.rank}. {r.pool} {r.score:.3f}" for r in ranked[:5]))})


REFIT_AFTER = timedelta(days=1, hours=1)   # the daily refit is late: the ranking refits itself


def model_path(settings: AnalyticsSettings) -> Path:
    """Where the region's fitted reclaim forecast model is saved and read."""
    return Path(settings.forecast_model_dir) / f"{settings.region}.pkl"


def forecast_in_force(clickhouse: ClickHouseResource, postgres: PostgresResource, settings: AnalyticsSettings,
                      now: datetime, forward_free: Any, in_force: dict[str, str]
                      ) -> tuple[dict[str, history.PoolForecast], str | None]:
    """Each pool's reclaim forecast from the model in force (fitted now when there is none or it is stale), and
    its version; empty when no model can be fitted yet (too little history): the columns stay NULL."""
    fitted = model.load(model_path(settings))
    if fitted is None or now - fitted.trained_until > REFIT_AFTER:
        try:
            fitted = history.train_from_history(clickhouse, settings.region, now, 7,
                                                history.declared_horizons(postgres), in_force)
        except ValueError as exc:
            get_dagster_logger().warning(f"no reclaim forecast published: {exc}")
            return {}, None
        model.save(fitted, model_path(settings))
    features = history.latest_features(clickhouse, settings.region, now, in_force, forward_free)
    return (history.forecast_frame(fitted, features) if len(features) else {}), fitted.version
