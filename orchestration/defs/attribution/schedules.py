"""Attribution hourly, five minutes past the hour, one partition per run."""

from dagster import AssetSelection, DefaultScheduleStatus, build_schedule_from_partitioned_job, define_asset_job

from .assets import savings_attribution

__all__ = ["attribution_job", "attribution_schedule"]

attribution_job = define_asset_job("attribution_hourly", AssetSelection.assets(savings_attribution))
attribution_schedule = build_schedule_from_partitioned_job(attribution_job, minute_of_hour=5,
    default_status=DefaultScheduleStatus.RUNNING)
