"""The Grafana dashboards of deploy/monitoring/dashboards (fleet, per-workload showback, SRE): valid JSON, and every
query names what exists — a Prometheus query only metrics SCO exports (the series lists of the processes and the
agent), a ClickHouse query only tables of the migrations or dbt models; `promtool` parses every PromQL query."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.instruments import SERIES as AGENT
from controllers.controller.exclusion_metrics import SERIES as EXCLUSION
from controllers.controller.metrics import SERIES as CONTROLLER
from stores.ingest_metrics import SERIES as INGEST
from stores.outbox_metrics import SERIES as OUTBOX
from testkit.paths import REPO
from tests.support.testbeds import tool

DASHBOARDS = REPO / "deploy" / "monitoring" / "dashboards"
METRICS = {name for series in (AGENT, EXCLUSION, CONTROLLER, INGEST, OUTBOX) for name, _, _ in series} | {"up"}
_METRIC = re.compile(r"\b(sco_[a-z0-9_]+|up)\b(?!\s*\()")
_TABLE = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def _tables() -> set[str]:
    created = {m.group(1) for sql in (REPO / "stores" / "migrations" / "clickhouse").glob("*.sql")
               for m in re.finditer(r"CREATE TABLE IF NOT EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)", sql.read_text())}
    return created | {p.stem for p in (REPO / "dbt" / "models").rglob("*.sql")}


def _targets() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        doc = json.loads(path.read_text())
        out += [(path.name, p["title"], t) for p in doc["panels"] for t in p["targets"]]
        out += [(path.name, f"variable {v['name']}", {"rawSql" if v["datasource"]["type"] != "prometheus" else "expr":
                                                      v["query"]})
                for v in doc["templating"]["list"] if v["type"] == "query"]
    return out


def _metric_names(expr: str) -> set[str]:
    return {re.sub(r"_(bucket|count|sum)$", "", m) if m not in METRICS else m for m in _METRIC.findall(expr)}


def test_the_three_dashboards_are_valid_json_with_unique_panel_ids() -> None:
    names = sorted(p.name for p in DASHBOARDS.glob("*.json"))
    assert names == ["sco-fleet.json", "sco-showback.json", "sco-sre.json"]
    for name in names:
        doc = json.loads((DASHBOARDS / name).read_text())
        ids = [p["id"] for p in doc["panels"]]
        assert doc["uid"] and doc["title"] and len(ids) == len(set(ids)) and all(p["targets"] for p in doc["panels"])


def test_every_prometheus_query_names_only_metrics_sco_exports() -> None:
    for dashboard, title, target in _targets():
        if "expr" in target:
            named = _metric_names(target["expr"])
            assert named and named <= METRICS, f"{dashboard} / {title}: {sorted(named - METRICS)} not exported"


def test_every_clickhouse_query_reads_tables_or_dbt_models_that_exist() -> None:
    tables = _tables()
    for dashboard, title, target in _targets():
        if "rawSql" in target:
            named = set(_TABLE.findall(target["rawSql"]))
            assert named and named <= tables, f"{dashboard} / {title}: {sorted(named - tables)} is no table or model"


def test_the_checks_catch_a_metric_or_table_that_does_not_exist() -> None:
    assert _metric_names("rate(sco_controller_passes_totl[5m])") - METRICS == {"sco_controller_passes_totl"}
    assert set(_TABLE.findall("SELECT 1 FROM fct_showbak_monthly")) - _tables() == {"fct_showbak_monthly"}


def test_the_alert_rules_name_only_metrics_sco_exports() -> None:
    rules = yaml.safe_load((REPO / "deploy" / "monitoring" / "rules" / "sco-alerts.yml").read_text())
    for rule in (r for g in rules["groups"] for r in g["rules"]):
        named = _metric_names(rule["expr"])
        assert named and named <= METRICS, f"{rule['alert']}: {sorted(named - METRICS)} not exported"


@pytest.mark.testbed
def test_promtool_parses_every_prometheus_query_of_the_dashboards(tmp_path: Path) -> None:
    exprs = [t["expr"].replace("$region", ".*").replace("$workload", "w") for _, title, t in _targets()
             if "expr" in t and not title.startswith("variable ")]  # label_values(...) is Grafana's, not PromQL
    doc = {"groups": [{"name": "dashboards", "rules": [{"record": f"sco:dashboard_query:{i}", "expr": e}
                                                       for i, e in enumerate(exprs)]}]}
    (tmp_path / "queries.yml").write_text(yaml.safe_dump(doc))
    out = subprocess.run([tool("promtool"), "check", "rules", str(tmp_path / "queries.yml")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and f"SUCCESS: {len(exprs)} rules found" in out.stdout, out.stdout + out.stderr
