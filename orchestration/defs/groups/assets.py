# mypy: disable-error-code="type-arg"
"""The correlation groups asset: topology groups refined by phi, kept with their evidence, published in force."""

from dagster import MaterializeResult, asset

from orchestration import groups
from orchestration.catalogue import load_catalogue
from orchestration.defs.catalogue.assets import pool_catalogue
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource

__all__ = ["correlation_groups"]


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Daily: topology groups refined by phi over 90 days of 10-minute reclaim windows; splits and "
                   "merges kept with their evidence; published in force (ADR-06).")
def correlation_groups(clickhouse: ClickHouseResource, postgres: PostgresResource,
                       settings: AnalyticsSettings) -> MaterializeResult:
    """Recompute the co-reclamation groups and write them, with their changes."""
    postgres.migrate()
    now = settings.data_now(clickhouse)
    pools = load_catalogue(clickhouse, settings.region, "reclaimable")
    topology = {p.pool: p.aggregate for p in pools}
    found = groups.compute_groups(clickhouse, settings.region, now, settings.phi_window_days, topology=topology)
    groups.write_groups(clickhouse, settings.region, now, found, topology)
    groups.publish_groups(postgres, settings.region, now, found)
    return MaterializeResult(metadata={"groups": len(set(found.group_of.values())), "pools": len(found.group_of),
                                       "merges": sum(c.kind == "merge" for c in found.changes),
                                       "splits": sum(c.kind == "split" for c in found.changes)})
