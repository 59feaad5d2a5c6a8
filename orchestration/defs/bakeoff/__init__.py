"""The placement bake-off: seed × strategy as static partitions of ``strategy_month`` (ClickHouse
``strategy_months``), the ``bakeoff`` job that runs them, and the dbt model ``fct_strategy_comparison`` over them."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """The partitioned asset and its job (the comparison model is a dbt asset of the finance domain)."""
    from .assets import bakeoff_job, strategy_month

    return Definitions(assets=[strategy_month], jobs=[bakeoff_job])
