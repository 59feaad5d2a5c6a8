"""Finance: the dbt-clickhouse models (``dbt/``) as assets through dagster-dbt, their docs site, and the
great-expectations suites on the marts finance reads as asset checks."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """The dbt assets, the docs site asset and the marts' expectation checks."""
    from .assets import finance_docs, finance_models
    from .checks import CHECKS

    return Definitions(assets=[finance_models(), finance_docs], asset_checks=CHECKS)
