"""Rankings: the five-minute composite score per pool, published as the ranking in force (ADR-07)."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import pool_rankings
    from .checks import CHECKS
    from .schedules import rankings_job, rankings_schedule

    return Definitions(assets=[pool_rankings], asset_checks=CHECKS, jobs=[rankings_job],
                       schedules=[rankings_schedule])
