"""dbt-clickhouse (driver: http) runs a small project unchanged against `sco clickhouse serve`: a table, an
incremental model with ``unique_key`` (run twice so the incremental path runs), and data tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from stores import clickhouse
from testkit.clickhouse import WRITER, ClickHouseProcess
from testkit.paths import REPO

PROJECT = Path(__file__).with_name("dbt_project")
DBT = REPO / ".venv" / "bin" / "dbt"


def _dbt(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1",
           "DBT_PROFILES_DIR": str(project)}
    return subprocess.run([str(DBT), *args, "--project-dir", str(project), "--profiles-dir", str(project)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
def test_a_dbt_project_builds_table_incremental_and_tests_through_the_front_end(
        clickhouse_server: ClickHouseProcess, tmp_path: Path) -> None:
    assert DBT.exists(), f"{DBT} missing: install the analytics extra into .venv"
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    schema = f"dbt_{uuid.uuid4().hex[:8]}"
    assert clickhouse_server.running is not None
    (project / "profiles.yml").write_text(
        "sco_stack_check:\n  target: dev\n  outputs:\n    dev:\n      type: clickhouse\n      driver: http\n"
        f"      host: 127.0.0.1\n      port: {clickhouse_server.running.port}\n      schema: {schema}\n"
        f"      user: {WRITER}\n      password: '{clickhouse_server.passwords[WRITER]}'\n      threads: 4\n")
    first = _dbt(project, "build")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert "PASS=5" in first.stdout  # 2 models + 3 tests
    second = _dbt(project, "build", "--vars", "{round: 2}")
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-2000:]

    client = clickhouse.client(f"{clickhouse_server.url}/?database={schema}")
    rows = dict(client.query("SELECT id, v FROM fct_readings FINAL ORDER BY id").result_rows)
    client.close()
    assert sorted(rows) == list(range(20))
    assert rows[3] == "3"  # below the incremental filter: kept from round 1
    assert rows[7] == "14"  # updated in place by unique_key
    assert rows[19] == "38"  # new in round 2
