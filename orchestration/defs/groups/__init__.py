"""Groups: co-reclamation groups, daily (ADR-06). Scheduled with the daily analytics (``insights``)."""

from dagster import Definitions

__all__ = ["definitions"]


def definitions() -> Definitions:
    """This domain's Dagster definitions (its assets, checks, schedules or sensors)."""
    from .assets import correlation_groups
    from .checks import CHECKS

    return Definitions(assets=[correlation_groups], asset_checks=CHECKS)
