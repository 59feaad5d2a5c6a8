"""The dbt project's two targets: ``default`` (one server, the embedded front end that has no cluster) builds
plain MergeTree marts with no ``ON CLUSTER``; ``kubernetes`` (the ClickHouseInstallation of
deploy/stores/clickhouse-chi.yaml) runs the adapter's DDL ``ON CLUSTER "sco"`` and builds every mart as a
ReplicatedMergeTree. Compiled without a server: dbt-clickhouse opens its connection lazily and nothing here
needs it (the port given is closed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestration.finance_models import SHIPPED_DIR, dbt_executable
from testkit.paths import REPO

pytestmark = pytest.mark.slow  # two dbt compiles of the whole project: ~11 s of CPU, no place in the fast tier

MART = "fct_showback_monthly"
# the adapter's own macro, on the mart's relation as dbt builds it for the target's credentials; rendered only at
# execution (at parse time the adapter's methods answer None)
PROBE = (f"-- depends_on: {{{{ ref('{MART}') }}}}\n"
         f"{{% if execute %}}[{{{{ on_cluster_clause(ref('{MART}')) | trim }}}}]{{% endif %}}")


def _compile(target: str, out: Path) -> tuple[str, dict[str, Any]]:
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1",
           "SCO_DBT_CLICKHOUSE_HOST": "127.0.0.1", "SCO_DBT_CLICKHOUSE_PORT": "1"}
    env.pop("SCO_DBT_TARGET", None)
    run = subprocess.run([dbt_executable(), "compile", "--profiles-dir", str(SHIPPED_DIR), "--project-dir",
                          str(SHIPPED_DIR), "--target", target, "--target-path", str(out / "target"), "--log-path",
                          str(out / "logs"), "--no-populate-cache", "--no-partial-parse", "--inline", PROBE],
                         cwd=out, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    manifest: dict[str, Any] = json.loads((out / "target" / "manifest.json").read_text())
    return run.stdout, manifest


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, dict[str, Any]]]:
    return {target: _compile(target, tmp_path_factory.mktemp(target)) for target in ("default", "kubernetes")}


def _marts(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["name"]: node["config"] for node in manifest["nodes"].values()
            if node["resource_type"] == "model" and node["fqn"][1] == "marts"}


def test_the_kubernetes_target_runs_the_marts_ddl_on_the_cluster_as_replicated_tables(
        compiled: dict[str, tuple[str, dict[str, Any]]]) -> None:
    stdout, manifest = compiled["kubernetes"]
    assert '[ON CLUSTER "sco"]' in stdout
    marts = _marts(manifest)
    assert MART in marts and len(marts) >= 6
    for name, config in marts.items():
        assert config["materialized"] == "table", name
        assert config["engine"] == "ReplicatedMergeTree('/clickhouse/tables/{uuid}/{shard}', '{replica}')", name


def test_the_default_target_keeps_one_servers_marts_with_no_cluster(
        compiled: dict[str, tuple[str, dict[str, Any]]]) -> None:
    stdout, manifest = compiled["default"]
    assert "[]" in stdout and "ON CLUSTER" not in stdout
    assert {config["engine"] for config in _marts(manifest).values()} == {"MergeTree()"}


def test_the_kubernetes_target_names_the_operators_cluster_and_service() -> None:
    profile = yaml.safe_load((SHIPPED_DIR / "profiles.yml").read_text())["sco"]
    chi = yaml.safe_load((REPO / "deploy" / "stores" / "clickhouse-chi.yaml").read_text())
    target = profile["outputs"]["kubernetes"]
    (cluster,) = chi["spec"]["configuration"]["clusters"]
    assert target["cluster"] == cluster["name"] and target["cluster_mode"] is True
    service = f"clickhouse-{chi['metadata']['name']}.{chi['metadata']['namespace']}.svc"
    assert f"'{service}'" in target["host"] and "'analytics'" in target["user"]
    assert "cluster" not in profile["outputs"]["default"]
