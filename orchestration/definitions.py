"""The one Dagster code location (``[tool.dagster]`` in pyproject: ``dagster dev`` from the repository root).

    dagster asset materialize -m orchestration.definitions --select '*'

The domains in ``orchestration.defs`` merged into one ``Definitions``, built when Dagster loads the location
(``defs``, a lazy ``@definitions``) or a caller asks (``build_definitions()``), never at import: the dbt
manifest is parsed then, and only when stale.

Schedules: rankings every 5 minutes, attribution hourly, groups/precision/breaches/recommendations and the
finance models daily, the archive monthly. The sensor runs one pass of the ingest
(``stores.ingest.drain``: JetStream → ClickHouse) and asks for a fresh ranking when the history moved.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from typing import Any

from dagster import Definitions, definitions

from .defs import DOMAINS

__all__ = ["build_definitions", "defs", "resources"]


def resources() -> dict[str, Any]:
    """The resources, configured from the environment as every SCO process is (empty: the stack file)."""
    from .defs.finance.assets import dbt_resource
    from .resources import (
        AnalyticsSettings,
        BakeoffSettings,
        ClickHouseResource,
        PostgresResource,
        ProviderFeedResource,
        RgwResource,
    )

    return {
        "clickhouse": ClickHouseResource(url=os.environ.get("SCO_CLICKHOUSE_URL", "")),
        "postgres": PostgresResource(url=os.environ.get("SCO_POSTGRES_URL", "")),
        "provider": ProviderFeedResource(base_url=os.environ.get("SCO_PROVIDER_URL", "")),
        "settings": AnalyticsSettings(region=os.environ.get("SCO_REGION", "r1"),
                                      as_of=os.environ.get("SCO_ANALYTICS_AS_OF", ""),
                                      archive_dir=os.environ.get("SCO_ARCHIVE_DIR", ".sco/archive"),
                                      archive_url=os.environ.get("SCO_ARCHIVE_URL", ""),
                                      archive_retention_days=int(os.environ.get("SCO_ARCHIVE_RETENTION_DAYS",
                                                                                str(7 * 365))),
                                      archive_create_bucket=os.environ.get("SCO_ARCHIVE_CREATE_BUCKET") == "1",
                                      archive_correction=os.environ.get("SCO_ARCHIVE_CORRECTION", ""),
                                      dbt_docs_dir=os.environ.get("SCO_DBT_DOCS_DIR", ".sco/dbt-docs")),
        "dbt": dbt_resource(),
        "bakeoff": BakeoffSettings(days=float(os.environ.get("SCO_BAKEOFF_DAYS", "30")),
                                   warmup_days=float(os.environ.get("SCO_BAKEOFF_WARMUP_DAYS", "7")),
                                   revision=os.environ.get("SCO_BAKEOFF_REVISION", ""),
                                   contracts_dir=os.environ.get("SCO_BAKEOFF_CONTRACTS", ""),
                                   cache_dir=os.environ.get("SCO_BAKEOFF_CACHE", ".sco/bakeoff-traces")),
        "rgw": RgwResource(endpoint=os.environ.get("SCO_RGW_ENDPOINT", ""),
                           access_key=os.environ.get("SCO_RGW_ACCESS_KEY", ""),
                           secret_key=os.environ.get("SCO_RGW_SECRET_KEY", ""),
                           owners=os.environ.get("SCO_RGW_OWNERS", "{}"),
                           eur_per_gib_month=os.environ.get("SCO_STORAGE_EUR_PER_GIB_MONTH", "0.02")),
    }


@cache
def build_definitions() -> Definitions:
    """Every domain's definitions and the resources, merged (built once per process)."""
    domains = [importlib.import_module(f"{__package__}.defs.{name}").definitions() for name in DOMAINS]
    return Definitions.merge(*domains, Definitions(resources=resources()))


@definitions
def defs() -> Definitions:
    """The Dagster definitions of every domain (``dagster dev`` loads them here)."""
    return build_definitions()
