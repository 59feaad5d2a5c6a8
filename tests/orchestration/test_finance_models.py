"""The dbt manifest is loaded by several processes at once (Dagster's code server, the demo, parallel tests): a
parse must never leave a half-written manifest where they read it. On a loaded machine the suite once read one,
and every later reader failed on it (``JSONDecodeError`` at the same column)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestration import finance_models

# a dbt stand-in: writes half the manifest where it was told to, says so, waits for "go", writes the rest
FAKE_DBT = """\
import sys, time
from pathlib import Path
args = sys.argv[1:]
project = Path(args[args.index("--project-dir") + 1])
target = Path(args[args.index("--target-path") + 1]) if "--target-path" in args else project / "target"
target.mkdir(parents=True, exist_ok=True)
with open(target / "manifest.json", "w") as out:
    out.write('{"nodes": ')
    out.flush()
    (project / "half-written").touch()
    while not (project / "go").exists():
        time.sleep(0.01)
    out.write('{"model.x": 1}}')
"""


def _wait_for(path: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_reader_never_sees_a_half_written_manifest_while_dbt_parses(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "dbt"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: x\n")
    (project / "models" / "x.sql").write_text("select 1\n")
    fake = tmp_path / "dbt-fake"
    fake.write_text(f"#!{sys.executable}\n{FAKE_DBT}")
    fake.chmod(0o755)
    monkeypatch.setattr(finance_models, "DBT_DIR", project)
    monkeypatch.setattr(finance_models, "dbt_executable", lambda: str(fake))
    done: list[Path] = []
    parse = threading.Thread(target=lambda: done.append(finance_models.prepare_manifest()))
    parse.start()
    try:
        _wait_for(project / "half-written")
        shared = project / "target" / "manifest.json"
        assert not shared.exists(), f"half a manifest is readable where every process loads it: {shared.read_text()!r}"
    finally:
        (project / "go").touch()
        parse.join(timeout=120)
    assert done == [shared]
    assert json.loads(shared.read_text()) == {"nodes": {"model.x": 1}}
    assert [p.name for p in (project / "target").iterdir()] == ["manifest.json"]   # the scratch target is gone


def test_a_manifest_newer_than_the_project_is_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "dbt"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: x\n")
    (project / "target").mkdir()
    (project / "target" / "manifest.json").write_text("{}")
    monkeypatch.setattr(finance_models, "DBT_DIR", project)
    monkeypatch.setattr(finance_models, "dbt_executable", lambda: str(tmp_path / "no-such-dbt"))
    assert finance_models.prepare_manifest() == project / "target" / "manifest.json"
