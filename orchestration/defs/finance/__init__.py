"""Finance: the dbt-clickhouse models (``dbt/``) as assets through dagster-dbt."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import finance_models

    return Definitions(assets=[finance_models()])
