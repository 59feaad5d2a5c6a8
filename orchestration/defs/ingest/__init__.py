"""Ingest: the sensor that drains the event stream into ClickHouse and asks for a fresh ranking."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    from .sensors import new_events_sensor

    return Definitions(sensors=[new_events_sensor])
