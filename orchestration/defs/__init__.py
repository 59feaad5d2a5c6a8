"""The Dagster definitions, one folder per domain (the dagster-open-platform shape): each domain's
``assets.py``, ``checks.py``, ``schedules.py`` (or ``sensors.py``) and an ``__init__`` whose ``definitions()``
gathers them. ``orchestration.definitions`` merges the domains into the one code location.

Only this package, ``orchestration.definitions`` and ``orchestration.resources`` import Dagster; the logic
(SQL included) lives in the library modules beside them (``rankings``, ``groups``, ``ledger``, …)."""

__all__ = ["DOMAINS"]

DOMAINS = ("catalogue", "rankings", "groups", "insights", "costs", "attribution", "archive", "finance", "ingest",
           "health", "bakeoff")
