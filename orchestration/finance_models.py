"""The dbt-clickhouse project (``dbt/``) as the finance models: where it lives, how its manifest is built and
how the dbt process reaches ClickHouse. No Dagster here: ``orchestration.defs.finance`` turns the manifest
into assets (through dagster-dbt) the first time the code location is loaded, never at import.

Where it lives: in a source checkout, ``dbt/`` at the repository root; in an installed wheel, the package data
``orchestration/dbt_project`` (setup.py puts it there). dbt writes ``target/`` and ``logs/`` into its project,
and an installed package may be read-only (the image's root file system is), so an installed project is run
from a copy in ``$SCO_DBT_DIR`` (default: a per-version, per-user directory under the temporary directory)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stores.clickhouse import client_kwargs
from stores.config import resolve_url

__all__ = ["DBT_DIR", "SHIPPED_DIR", "SOURCE_ASSETS", "dbt_credentials", "dbt_credentials_env", "dbt_env",
           "dbt_executable", "dbt_vars", "ensure_project", "prepare_manifest"]

_PACKAGED = Path(__file__).resolve().parent / "dbt_project"
_CHECKOUT = Path(__file__).resolve().parents[1] / "dbt"
_RUNTIME_OUTPUT = ("target", "logs", "dbt_packages", ".user.yml", "__pycache__")


def _installed() -> bool:
    return (_PACKAGED / "dbt_project.yml").is_file()


def _work_dir() -> Path:
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("sco")
    except PackageNotFoundError:
        release = "0"
    default = Path(tempfile.gettempdir()) / f"sco-dbt-{release}-{os.getuid()}"
    return Path(os.environ.get("SCO_DBT_DIR") or default)


# the project as shipped (read only) and the directory dbt runs in (the same in a source checkout)
SHIPPED_DIR = _PACKAGED if _installed() else _CHECKOUT
DBT_DIR = _work_dir() if _installed() else _CHECKOUT
# the ``sco`` sources and the assets that write them (a source not named here becomes ``sco_<name>``)
SOURCE_ASSETS = {"cost_attribution": "savings_attribution", "provider_pools": "pool_catalogue",
                 "contract_breaches": "contract_breaches", "recommendations": "recommendations",
                 "strategy_months": "strategy_month"}


_VARS = {"SCO_DBT_CLICKHOUSE_HOST": "sco_clickhouse_host", "SCO_DBT_CLICKHOUSE_PORT": "sco_clickhouse_port",
         "SCO_DBT_CLICKHOUSE_DATABASE": "sco_clickhouse_database"}
_ENV_LOCK = threading.RLock()


def dbt_executable() -> str:
    """The ``dbt`` beside this Python, else ``dbt`` on the PATH."""
    here = Path(sys.executable).with_name("dbt")
    return str(here) if here.exists() else "dbt"


def dbt_env(clickhouse_url: str | None = None) -> dict[str, str]:
    """The profile's environment for a ClickHouse URL (default: the configured one)."""
    kw = client_kwargs(resolve_url("clickhouse", clickhouse_url or None))
    env = {"SCO_DBT_CLICKHOUSE_HOST": str(kw["host"]), "SCO_DBT_CLICKHOUSE_PORT": str(kw["port"])}
    if "database" in kw:
        env["SCO_DBT_CLICKHOUSE_DATABASE"] = str(kw["database"])
    return {**env, **dbt_credentials_env(clickhouse_url)}


def dbt_credentials_env(clickhouse_url: str | None = None) -> dict[str, str]:
    """The URL's user and password as the profile reads them (``SCO_DBT_CLICKHOUSE_USER``/``_PASSWORD``): in
    the environment only, which other local users cannot read, never in ``--vars`` (the command line)."""
    kw = client_kwargs(resolve_url("clickhouse", clickhouse_url or None))
    return {"SCO_DBT_CLICKHOUSE_USER": str(kw.get("username") or "default"),
            "SCO_DBT_CLICKHOUSE_PASSWORD": str(kw.get("password") or "")}


@contextmanager
def dbt_credentials(clickhouse_url: str | None = None) -> Iterator[None]:
    """``os.environ`` carries the URL's credentials while a dbt process is started from this one (dagster-dbt
    passes the environment and nothing else); the previous values come back afterwards."""
    env = dbt_credentials_env(clickhouse_url)
    with _ENV_LOCK:
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def dbt_vars(clickhouse_url: str | None = None) -> dict[str, str]:
    """The connection without its credentials as ``--vars`` (``sco_clickhouse_host`` …): the profile prefers
    them to the environment; the credentials go through :func:`dbt_credentials` (the command line is public)."""
    return {_VARS[k]: v for k, v in dbt_env(clickhouse_url).items() if k in _VARS}


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file() and not set(q.relative_to(root).parts)
                    & set(_RUNTIME_OUTPUT)):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def ensure_project() -> Path:
    """The directory dbt runs in, holding the shipped project: from an installed package, a copy refreshed
    whenever the shipped files differ from what was copied (a stamp file holds their digest)."""
    if DBT_DIR == SHIPPED_DIR or SHIPPED_DIR != _PACKAGED:
        return DBT_DIR
    digest = _digest(SHIPPED_DIR)
    stamp = DBT_DIR / ".sco-shipped"
    if not stamp.is_file() or stamp.read_text() != digest:
        shutil.copytree(SHIPPED_DIR, DBT_DIR, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*_RUNTIME_OUTPUT))
        stamp.write_text(digest)
    return DBT_DIR


def prepare_manifest() -> Path:
    """``dbt parse`` when the manifest is missing or older than the project (no database connection needed).

    The parse writes into a target path of its own and the manifest is moved into place whole: several processes
    load it at once (Dagster's code server, the demo, parallel tests), and a reader must never see a manifest
    half written (the suite on a loaded machine read one, ``JSONDecodeError`` at column 663,581)."""
    ensure_project()
    manifest = DBT_DIR / "target" / "manifest.json"
    sources = [DBT_DIR / "dbt_project.yml", *(p for d in ("models", "macros", "tests")
                                               for p in (DBT_DIR / d).rglob("*") if p.is_file())]
    built = manifest.stat().st_mtime if manifest.exists() else 0.0
    if not manifest.exists() or any(p.stat().st_mtime > built for p in sources):
        manifest.parent.mkdir(exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="parse-", dir=manifest.parent))
        try:
            subprocess.run([dbt_executable(), "parse", "--profiles-dir", str(DBT_DIR), "--project-dir", str(DBT_DIR),
                            "--target-path", str(scratch), "--quiet"], check=True, cwd=DBT_DIR, capture_output=True)
            os.replace(scratch / "manifest.json", manifest)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return manifest
