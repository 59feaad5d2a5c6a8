"""The analytics side from the built artefact: the wheel installed into a fresh environment outside the source
tree loads the Dagster code location, parses the dbt project it ships, and opens a PostgreSQL-backed Dagster
instance with the dagster.yaml deploy/systemd ships."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from testkit.paths import REPO
from tests.deploy.installed import OUR_PACKAGES, InstalledSco, build_wheel, install

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("installed-wheel")]  # one wheel build per module


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InstalledSco]:
    root = tmp_path_factory.mktemp("installed")
    yield install(build_wheel(root), root)


def test_our_code_comes_from_the_wheel_only(installed: InstalledSco) -> None:
    probe = ("import importlib, json, sys; "
             f"print(json.dumps({{n: importlib.import_module(n).__file__ for n in {list(OUR_PACKAGES)!r}}}))")
    run = installed.run(str(installed.python), "-c", probe)
    assert run.returncode == 0, run.stderr
    where = json.loads(run.stdout)
    site = str(installed.venv)
    assert all(path.startswith(site) for path in where.values()), where
    assert not str(installed.workdir).startswith(str(REPO))


def test_the_wheel_ships_the_dbt_project_and_finds_it_installed(installed: InstalledSco) -> None:
    probe = ("from orchestration import finance_models as f; "
             "print(f.SHIPPED_DIR); print(f.ensure_project())")
    run = installed.run(str(installed.python), "-c", probe)
    assert run.returncode == 0, run.stderr
    shipped, workdir = run.stdout.split()
    assert shipped.startswith(str(installed.venv)) and shipped.endswith("orchestration/dbt_project")
    assert (Path(shipped) / "dbt_project.yml").is_file()
    assert sorted(p.name for p in (Path(shipped) / "models" / "marts").glob("*.sql")) == sorted(
        p.name for p in (REPO / "dbt" / "models" / "marts").glob("*.sql"))
    assert workdir == str(installed.workdir / "dbt") and (Path(workdir) / "dbt_project.yml").is_file()


def test_dbt_parses_the_shipped_project(installed: InstalledSco) -> None:
    project = installed.workdir / "parse"
    run = installed.run(str(installed.python), "-c",
                        "from orchestration import finance_models as f; print(f.SHIPPED_DIR)")
    shutil.copytree(run.stdout.strip(), project)
    parse = installed.run("dbt", "parse", "--project-dir", str(project), "--profiles-dir", str(project))
    assert parse.returncode == 0, parse.stdout + parse.stderr
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    assert any(key == "model.sco_finance.fct_savings_ledger" for key in manifest["nodes"])


def test_dagster_validates_the_code_location_from_the_wheel(installed: InstalledSco, tmp_path: Path) -> None:
    run = installed.run("dagster", "definitions", "validate", "-m", "orchestration.definitions",
                        extra={"DAGSTER_HOME": str(tmp_path)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Validation successful" in run.stdout + run.stderr


@pytest.mark.services
def test_dagster_instance_info_on_the_shipped_postgres_dagster_yaml(installed: InstalledSco, tmp_path: Path,
                                                                   postgres_server: object) -> None:
    import psycopg

    url = postgres_server.url  # type: ignore[attr-defined]
    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = 'dagster'").fetchone() is None:
            conn.execute("CREATE DATABASE dagster")
    shutil.copy(REPO / "deploy" / "systemd" / "dagster" / "dagster.yaml", tmp_path / "dagster.yaml")
    parts = urlsplit(url)
    env = {"DAGSTER_HOME": str(tmp_path), "SCO_DAGSTER_PG_HOST": parts.hostname or "",
           "SCO_DAGSTER_PG_PORT": str(parts.port), "SCO_DAGSTER_PG_USER": parts.username or "",
           "SCO_DAGSTER_PG_PASSWORD": parts.password or ""}
    run = installed.run("dagster", "instance", "info", extra=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PostgresRunStorage" in run.stdout and "PostgresEventLogStorage" in run.stdout


def test_the_wheel_requires_dagsters_postgres_storage_and_kubernetes_launcher(installed: InstalledSco) -> None:
    probe = "import importlib.metadata as m, json; print(json.dumps(m.requires('sco')))"
    run = installed.run(str(installed.python), "-c", probe)
    analytics = {r.split(";")[0].strip() for r in json.loads(run.stdout) if 'extra == "analytics"' in r}
    assert {"dagster-postgres==0.29.27", "dagster-k8s==0.29.27"} <= analytics
