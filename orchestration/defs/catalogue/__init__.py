"""Catalogue: pools, aggregates, halls and rate cards from the provider feed."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import pool_catalogue

    return Definitions(assets=[pool_catalogue])
