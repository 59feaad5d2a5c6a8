"""Insights: advisory precision, contract breaches and recommendations; the daily analytics schedule."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import ASSETS
    from .checks import CHECKS
    from .schedules import daily_job, daily_schedule

    return Definitions(assets=ASSETS, asset_checks=CHECKS, jobs=[daily_job], schedules=[daily_schedule])
