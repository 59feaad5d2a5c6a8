"""`sco demo --contracts-only` (the first thing `make demo` prints): the compiler report for the
example repository, and its bundles signed and verified."""

from __future__ import annotations

from pathlib import Path

from tests.contracts.helpers import REPO
from tests.support.cli import sco


def test_the_demo_prints_the_compiler_report_and_verified_bundles_for_the_examples() -> None:
    result = sco("demo", "--contracts-only", cwd=REPO)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("SCO contract compiler report — deploy/contracts")
    assert "14 compiled (T1: 2, T2: 4, T3: 3, T4: 2, T5: 3; 1 bespoke for review), 0 refused" in out
    assert out.count("verified (+ governance signature") == 2


def test_the_demo_refuses_a_contract_folder_with_no_contract_naming_the_code(tmp_path: Path) -> None:
    (tmp_path / "pools.csv").write_text((REPO / "deploy" / "contracts" / "pools.csv").read_text())
    result = sco("demo", "--contracts", str(tmp_path), "--contracts-only", cwd=REPO)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("sco: error: REPO003: no contract files in ") and result.stderr.count("\n") == 1
