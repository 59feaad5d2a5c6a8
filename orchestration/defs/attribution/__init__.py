"""Attribution: the hourly savings ledger (ADR-26) and its checks."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import savings_attribution
    from .checks import CHECKS
    from .schedules import attribution_job, attribution_schedule

    return Definitions(assets=[savings_attribution], asset_checks=CHECKS, jobs=[attribution_job],
                       schedules=[attribution_schedule])
