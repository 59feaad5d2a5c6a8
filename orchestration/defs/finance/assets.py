"""The dbt models as assets: each model is an asset in the ``finance`` group, the ``sco`` sources map to the
assets that write them. The manifest is built on first use (``finance_models()``, when the code location
loads), never at import; the dbt process gets its ClickHouse as ``--vars``, not through ``os.environ``."""

import json
import warnings
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, MaterializeResult, MetadataValue, asset
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from orchestration.finance_docs import generate_docs
from orchestration.finance_models import (
    SOURCE_ASSETS,
    dbt_credentials,
    dbt_executable,
    dbt_vars,
    ensure_project,
    prepare_manifest,
)
from orchestration.resources import AnalyticsSettings, ClickHouseResource

__all__ = ["dbt_resource", "finance_docs", "finance_models"]


class _Translator(DagsterDbtTranslator):
    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> AssetKey:
        if dbt_resource_props.get("resource_type") == "source":
            name = str(dbt_resource_props["name"])
            return AssetKey(SOURCE_ASSETS.get(name, f"sco_{name}"))
        return AssetKey(["finance", str(dbt_resource_props["name"])])

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return "finance"


def dbt_resource() -> DbtCliResource:
    """The dbt CLI resource on the dbt project (the checkout's, or a copy of the installed package's) and profile."""
    project = str(ensure_project())
    return DbtCliResource(project_dir=project, profiles_dir=project, dbt_executable=dbt_executable())


@cache
def finance_models() -> AssetsDefinition:
    """The dbt assets, built once per process from the manifest (``dbt parse`` only when it is stale)."""

    @dbt_assets(manifest=prepare_manifest(), dagster_dbt_translator=_Translator(),
                exclude="resource_type:unit_test", name="finance_models")
    def _finance_models(context: AssetExecutionContext, dbt: DbtCliResource,
                        clickhouse: ClickHouseResource) -> Iterator[Any]:
        """staging → intermediate → marts; data tests run with each model (unit tests run in CI)."""
        args = ["build", "--exclude", "resource_type:unit_test", "--vars", json.dumps(dbt_vars(clickhouse.url))]
        with warnings.catch_warnings():  # dagster-dbt 0.29 calls the deprecated AssetExecutionContext.op
            warnings.simplefilter("ignore", DeprecationWarning)
            with dbt_credentials(clickhouse.url):  # the dbt process is started here, with them in its environment
                invocation = dbt.cli(args, context=context)
            yield from invocation.stream()

    return _finance_models


@asset(key=AssetKey(["finance", "dbt_docs"]), group_name="finance",
       deps=[AssetKey(["finance", m]) for m in ("fct_savings_ledger", "fct_showback_monthly", "fct_finance_export",
                                                "dim_pool", "dim_workload")],
       description="dbt's documentation site of the finance models (`dbt docs generate --static`): every mart's "
                   "columns, tests, lineage and exposures, in one HTML file under the settings' dbt_docs_dir.")
def finance_docs(clickhouse: ClickHouseResource, settings: AnalyticsSettings) -> MaterializeResult:  # type: ignore[type-arg]
    """Generate the site after the marts are built, so its catalogue describes the tables finance reads."""
    site = generate_docs(Path(settings.dbt_docs_dir).resolve(), clickhouse.url or None)
    return MaterializeResult(metadata={
        "index": MetadataValue.path(str(site.index)),
        "models": site.models,
        "columns": site.columns,
        "described_columns": site.described_columns,
    })
