"""The code location's shape, without services: the asset graph against its checked-in snapshot, and the
layout rules (Dagster only in ``orchestration/defs``, no SQL in asset bodies, no ``os.environ`` mutation,
nothing heavy at import)."""

from __future__ import annotations

import ast
import difflib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testkit.paths import REPO

from .asset_graph import SNAPSHOT, asset_graph, render

ORCHESTRATION = REPO / "orchestration"
# Dagster wiring: the domains, the code location that merges them, and the resources
WIRING = {ORCHESTRATION / "definitions.py", ORCHESTRATION / "resources.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


@pytest.mark.xdist_group("dagster-definitions")  # the worker that built the definitions reads them
def test_the_asset_graph_matches_its_snapshot(definitions: Any) -> None:
    got = render(asset_graph(definitions))
    want = SNAPSHOT.read_text()
    diff = "".join(difflib.unified_diff(want.splitlines(keepends=True), got.splitlines(keepends=True),
                                        "asset_graph.json (checked in)", "asset_graph (the code location now)"))
    assert got == want, (
        "the asset graph changed (keys, deps, partitions, checks, jobs, cron or default statuses):\n" + diff +
        "\nif intended, regenerate the snapshot (see tests/orchestration/asset_graph.py) and commit it")


def test_the_snapshot_names_the_cadences_all_running_by_default() -> None:
    snapshot = json.loads(SNAPSHOT.read_text())
    assert {name: (s["cron"], s["default_status"]) for name, s in snapshot["schedules"].items()} == {
        "rankings_every_5_min_schedule": ("*/5 * * * *", "RUNNING"),
        "attribution_hourly_schedule": ("5 * * * *", "RUNNING"),
        "costs_hourly_schedule": ("1 * * * *", "RUNNING"),
        "analytics_daily_schedule": ("20 0 * * *", "RUNNING"),
        "reclaim_forecast_daily_schedule": ("17 0 * * *", "RUNNING"),
        "archive_monthly_schedule": ("0 2 1 * *", "RUNNING")}
    assert snapshot["sensors"]["new_events_sensor"]["jobs"] == ["rankings_every_5_min"]
    assert {s["default_status"] for s in snapshot["sensors"].values()} == {"RUNNING"}


def test_only_the_defs_package_and_the_wiring_import_dagster() -> None:
    offenders = [str(p.relative_to(REPO)) for p in sorted(ORCHESTRATION.glob("*.py")) if p not in WIRING
                 and any(m.split(".")[0] in ("dagster", "dagster_dbt") for m in _imports(p))]
    assert offenders == [], f"logic modules importing Dagster (move the Dagster part into orchestration/defs): " \
                            f"{offenders}"


def test_asset_bodies_hold_no_sql_and_never_set_the_environment() -> None:
    found = []
    for path in sorted((ORCHESTRATION / "defs").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
                    kw in node.value.upper() for kw in ("SELECT ", "INSERT INTO", "DELETE FROM", "ALTER TABLE")):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: SQL {node.value[:40]!r}")
            if isinstance(node, ast.Attribute) and node.attr in ("update", "setdefault", "pop") and \
                    ast.unparse(node.value) == "os.environ":
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: os.environ.{node.attr}")
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and \
                    ast.unparse(node.value) == "os.environ":
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: os.environ[...] =")
    assert found == [], "move SQL into the logic modules; pass settings, do not set them:\n" + "\n".join(found)


@pytest.mark.slow  # a fresh interpreter importing Dagster: ~5 s on a quiet machine
def test_importing_the_code_location_parses_no_dbt_project() -> None:
    code = ("import sys, orchestration.definitions, orchestration.defs.finance.assets as f; "
            "print(f.finance_models.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.stdout.split()[-1] == "0", out.stdout + out.stderr
