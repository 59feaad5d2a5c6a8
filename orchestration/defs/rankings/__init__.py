"""Rankings: the five-minute composite score and reclaim forecast per pool, published as the ranking in force
(ADR-07); the forecast's model refitted daily and scored daily against its baselines."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import pool_rankings
    from .checks import CHECKS
    from .forecast import FORECAST_CHECKS, forecast_job, forecast_schedule, reclaim_forecast_model
    from .schedules import rankings_job, rankings_schedule

    return Definitions(assets=[pool_rankings, reclaim_forecast_model], asset_checks=[*CHECKS, *FORECAST_CHECKS],
                       jobs=[rankings_job, forecast_job], schedules=[rankings_schedule, forecast_schedule])
