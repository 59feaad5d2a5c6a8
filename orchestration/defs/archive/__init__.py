"""Archive: the monthly Parquet export for finance (ADR-25)."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import cost_archive
    from .checks import CHECKS
    from .schedules import archive_job, archive_schedule

    return Definitions(assets=[cost_archive], asset_checks=CHECKS, jobs=[archive_job], schedules=[archive_schedule])
