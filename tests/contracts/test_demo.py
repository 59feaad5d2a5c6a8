"""`sco demo --contracts-only` (the first thing `make demo` prints): the compiler report for the
example repository, and its bundles signed and verified."""

from __future__ import annotations

from tests.contracts.helpers import REPO
from tests.support.cli import sco


def test_the_demo_prints_the_compiler_report_and_verified_bundles_for_the_examples() -> None:
    result = sco("demo", "--contracts-only", cwd=REPO)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("SCO contract compiler report — deploy/contracts")
    assert "14 compiled (T1: 2, T2: 4, T3: 3, T4: 2, T5: 3; 1 bespoke for review), 0 refused" in out
    assert out.count("verified (+ governance signature") == 2
