"""Cost inputs of the attribution (ADR-26): checkpoint storage from RGW and the orchestrator's own footprint."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import ASSETS
    from .schedules import costs_job, costs_schedule

    return Definitions(assets=ASSETS, jobs=[costs_job], schedules=[costs_schedule])
