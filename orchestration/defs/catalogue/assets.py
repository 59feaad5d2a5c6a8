# mypy: disable-error-code="type-arg"
"""The pool catalogue asset (ADR-06): refreshed from the provider feed when one is configured, else what a
replayed pool history (``sco sim history``) left in ClickHouse."""

from dagster import MaterializeResult, asset

from orchestration import catalogue
from orchestration.resources import AnalyticsSettings, ClickHouseResource, ProviderFeedResource

__all__ = ["pool_catalogue"]


@asset(group_name="analytics", description="Pools, aggregates and halls from the provider (ADR-06).")
def pool_catalogue(clickhouse: ClickHouseResource, settings: AnalyticsSettings,
                   provider: ProviderFeedResource) -> MaterializeResult:
    """Refresh the pool catalogue and rate card from the provider's feed (when one is set)."""
    clickhouse.migrate()
    if provider.base_url:
        catalogue.refresh_from_feed(clickhouse, settings.region, provider.document("/v1/catalogue"),
                                    provider.document("/v1/rate-card"))
    pools = catalogue.load_catalogue(clickhouse, settings.region)
    if not pools:
        raise ValueError(f"no pools for region {settings.region} in ClickHouse: configure provider.base_url or "
                         "load a pool history (`sco sim history`)")
    return MaterializeResult(metadata=catalogue.summary(pools))
