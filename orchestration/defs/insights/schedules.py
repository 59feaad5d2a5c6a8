"""The daily analytics at 00:20 UTC (running by default): the co-reclamation groups, the insights and the dbt
finance models, selected by key (the groups and finance domains own those assets)."""

from dagster import AssetSelection, DefaultScheduleStatus, ScheduleDefinition, define_asset_job

from .assets import advisory_precision, contract_breaches, recommendations

__all__ = ["daily_job", "daily_schedule"]

daily_job = define_asset_job("analytics_daily", AssetSelection.assets(
    "correlation_groups", advisory_precision, contract_breaches, recommendations) | AssetSelection.groups("finance"))
daily_schedule = ScheduleDefinition(job=daily_job, cron_schedule="20 0 * * *", execution_timezone="UTC",
                                    default_status=DefaultScheduleStatus.RUNNING)
