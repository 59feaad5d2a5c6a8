"""The dbt-clickhouse project (``dbt/``) as Dagster assets through dagster-dbt: each model is an asset, the
``sco`` sources map to the assets that write them, and the dbt process reaches ClickHouse over HTTP with the
host and port taken from the same URL the other resources use."""

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, AssetKey
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from stores.clickhouse import client_kwargs
from stores.config import resolve_url

__all__ = ["DBT_DIR", "dbt_env", "dbt_executable", "dbt_resource", "finance_models", "prepare_manifest"]

DBT_DIR = Path(__file__).resolve().parents[1] / "dbt"
SOURCE_ASSETS = {"cost_attribution": "savings_attribution", "provider_pools": "pool_catalogue",
                 "contract_breaches": "contract_breaches", "recommendations": "recommendations"}


def dbt_executable() -> str:
    here = Path(sys.executable).with_name("dbt")
    return str(here) if here.exists() else "dbt"


def dbt_env(clickhouse_url: str | None = None) -> dict[str, str]:
    """The profile's environment for a ClickHouse URL (default: the configured one)."""
    kw = client_kwargs(resolve_url("clickhouse", clickhouse_url or None))
    env = {"SCO_DBT_CLICKHOUSE_HOST": str(kw["host"]), "SCO_DBT_CLICKHOUSE_PORT": str(kw["port"])}
    if "database" in kw:
        env["SCO_DBT_CLICKHOUSE_DATABASE"] = str(kw["database"])
    return env


def prepare_manifest() -> Path:
    """``dbt parse`` when the manifest is missing or older than the project (no database connection needed)."""
    manifest = DBT_DIR / "target" / "manifest.json"
    sources = [DBT_DIR / "dbt_project.yml", *(p for d in ("models", "macros", "tests")
                                               for p in (DBT_DIR / d).rglob("*") if p.is_file())]
    built = manifest.stat().st_mtime if manifest.exists() else 0.0
    if not manifest.exists() or any(p.stat().st_mtime > built for p in sources):
        subprocess.run([dbt_executable(), "parse", "--profiles-dir", str(DBT_DIR), "--project-dir", str(DBT_DIR),
                        "--quiet"], check=True, cwd=DBT_DIR, capture_output=True)
    return manifest


class _Translator(DagsterDbtTranslator):
    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> AssetKey:
        if dbt_resource_props.get("resource_type") == "source":
            name = str(dbt_resource_props["name"])
            return AssetKey(SOURCE_ASSETS.get(name, f"sco_{name}"))
        return AssetKey(["finance", str(dbt_resource_props["name"])])

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return "finance"


def dbt_resource() -> DbtCliResource:
    return DbtCliResource(project_dir=str(DBT_DIR), profiles_dir=str(DBT_DIR), dbt_executable=dbt_executable())


@dbt_assets(manifest=prepare_manifest(), dagster_dbt_translator=_Translator(),
            exclude="resource_type:unit_test")
def finance_models(context: AssetExecutionContext, dbt: DbtCliResource) -> Iterator[Any]:
    """staging → intermediate → marts; data tests run with each model (unit tests run in CI)."""
    os.environ.update(dbt_env(os.environ.get("SCO_CLICKHOUSE_URL")))
    with warnings.catch_warnings():  # dagster-dbt 0.29 calls the deprecated AssetExecutionContext.op
        warnings.simplefilter("ignore", DeprecationWarning)
        yield from dbt.cli(["build", "--exclude", "resource_type:unit_test"], context=context).stream()
