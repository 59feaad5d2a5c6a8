"""Finance reads a documented product: every column of every dbt model described (one definition per meaning,
``dbt/models/docs/columns.md``), the marts finance and the showback read named in exposures, every source that is
loaded continuously declares its freshness. Read from the manifest ``dbt parse`` builds (no database)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestration.finance_models import prepare_manifest

READ_BY_PEOPLE = {"fct_finance_export", "fct_showback_monthly", "fct_savings_ledger"}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return dict(json.loads(prepare_manifest().read_text()))


def _models(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in manifest["nodes"].values() if n["resource_type"] == "model"]


def test_every_column_of_every_model_is_described(manifest: dict[str, Any]) -> None:
    columns = [(m["name"], c, col.get("description", "")) for m in _models(manifest)
               for c, col in m["columns"].items()]
    assert len(columns) >= 70
    assert [f"{m}.{c}" for m, c, d in columns if len(d.strip()) < 20] == []


def test_every_mart_column_is_declared_so_its_description_is_published(manifest: dict[str, Any]) -> None:
    marts = [m for m in _models(manifest) if "marts" in m["fqn"]]
    assert {m["name"] for m in marts} >= READ_BY_PEOPLE
    for m in marts:
        assert m["config"]["contract"]["enforced"], f"{m['name']}: an enforced contract declares every column"


def test_the_marts_people_read_are_named_in_exposures_with_an_owner(manifest: dict[str, Any]) -> None:
    exposed: set[str] = set()
    for exposure in manifest["exposures"].values():
        assert exposure["owner"].get("email") and exposure["description"].strip()
        exposed |= {n.split(".")[-1] for n in exposure["depends_on"]["nodes"]}
    assert exposed >= READ_BY_PEOPLE


def test_every_source_loaded_continuously_declares_its_freshness(manifest: dict[str, Any]) -> None:
    sources = {s["name"]: s for s in manifest["sources"].values()}
    # the catalogue is replaced when it changes, the bake-off writes when it is run: no cadence to hold them to
    replaced_whole = {"provider_pools", "strategy_months"}
    missing = [n for n, s in sources.items() if n not in replaced_whole
               and not (s.get("loaded_at_field") and (s.get("freshness") or {}).get("error_after", {}).get("count"))]
    assert missing == []
