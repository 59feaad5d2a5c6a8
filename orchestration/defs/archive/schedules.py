"""The archive on the first of the month at 02:00 UTC, for the month before."""

from dagster import AssetSelection, DefaultScheduleStatus, build_schedule_from_partitioned_job, define_asset_job

from .assets import cost_archive

__all__ = ["archive_job", "archive_schedule"]

archive_job = define_asset_job("archive_monthly", AssetSelection.assets(cost_archive))
archive_schedule = build_schedule_from_partitioned_job(archive_job, day_of_month=1, hour_of_day=2,
    default_status=DefaultScheduleStatus.RUNNING)
