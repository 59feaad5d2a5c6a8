"""Health: what SRE watches in Dagster (ADR-28) — the freshness checks of the assets that promise a cadence
(``orchestration.health.FRESHNESS``), the sensor that evaluates them, and the run-failure sensor that alerts."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .freshness import FRESHNESS_CHECKS, freshness_sensor
    from .sensors import alert_on_run_failure

    return Definitions(asset_checks=FRESHNESS_CHECKS, sensors=[freshness_sensor, alert_on_run_failure])
