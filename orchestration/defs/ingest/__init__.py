"""Ingest: the sensor that asks for a fresh ranking when the ingest service (`sco ingest`) landed events."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .sensors import new_events_sensor

    return Definitions(sensors=[new_events_sensor])
