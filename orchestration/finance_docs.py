"""dbt's documentation site for the finance models: ``dbt docs generate --static`` into a directory of its own,
written whole (a reader never sees a half-written site). No Dagster here: ``orchestration.defs.finance`` runs it
as the ``finance_docs`` asset after the marts are built, so the catalogue describes the tables finance reads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import DocsError
from .finance_models import dbt_credentials_env, dbt_executable, dbt_vars, ensure_project

__all__ = ["DocsSite", "generate_docs"]


@dataclass(frozen=True)
class DocsSite:
    """The generated site: its one-file page and how much it documents."""

    index: Path
    models: int
    columns: int
    described_columns: int


def generate_docs(out_dir: Path, clickhouse_url: str | None = None, timeout_s: float = 600.0) -> DocsSite:
    """Generate the static docs site into ``out_dir`` (``static_index.html`` plus manifest and catalogue).

    Raises:
        DocsError: ``ORC102`` when dbt fails; the message carries dbt's last lines (never the credentials).
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".dbt-docs-", dir=out_dir.parent))
    env = {**os.environ, **dbt_credentials_env(clickhouse_url)}
    project = ensure_project()  # the checkout's, or the installed package's copy
    try:
        proc = subprocess.run([dbt_executable(), "docs", "generate", "--static", "--profiles-dir", str(project),
                               "--project-dir", str(project), "--target-path", str(scratch),
                               "--vars", json.dumps(dbt_vars(clickhouse_url))],
                              cwd=project, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
        if proc.returncode != 0 or not (scratch / "static_index.html").exists():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
            raise DocsError(f"dbt docs generate failed (exit {proc.returncode}): {tail}; check the "
                                           "ClickHouse connection the analytics use (sco status) and `dbt debug`")
        site = _site(scratch)
        old = out_dir.with_name(out_dir.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if out_dir.exists():
            os.replace(out_dir, old)
        os.replace(scratch, out_dir)
        shutil.rmtree(old, ignore_errors=True)
        return DocsSite(out_dir / "static_index.html", site[0], site[1], site[2])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _site(target: Path) -> tuple[int, int, int]:
    manifest = json.loads((target / "manifest.json").read_text())
    models = [n for n in manifest["nodes"].values() if n.get("resource_type") == "model"]
    columns = [c for n in models for c in n.get("columns", {}).values()]
    return len(models), len(columns), sum(1 for c in columns if (c.get("description") or "").strip())
