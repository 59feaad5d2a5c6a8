"""Rankings every five minutes (running by default); the ingest sensor asks for the same job."""

from dagster import AssetSelection, DefaultScheduleStatus, ScheduleDefinition, define_asset_job

from orchestration.defs.catalogue.assets import pool_catalogue

from .assets import pool_rankings

__all__ = ["rankings_job", "rankings_schedule"]

rankings_job = define_asset_job("rankings_every_5_min", AssetSelection.assets(pool_catalogue, pool_rankings))
rankings_schedule = ScheduleDefinition(job=rankings_job, cron_schedule="*/5 * * * *", execution_timezone="UTC",
                                       default_status=DefaultScheduleStatus.RUNNING)
