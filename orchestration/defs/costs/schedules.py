"""The cost inputs hourly, a minute past the hour: the hour just ended, read at its end, before its attribution."""

from dagster import AssetSelection, DefaultScheduleStatus, build_schedule_from_partitioned_job, define_asset_job

from .assets import ASSETS

__all__ = ["costs_job", "costs_schedule"]

costs_job = define_asset_job("costs_hourly", AssetSelection.assets(*ASSETS))
costs_schedule = build_schedule_from_partitioned_job(costs_job, minute_of_hour=1,
    default_status=DefaultScheduleStatus.RUNNING)
