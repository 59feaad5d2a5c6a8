"""Comments and docstrings in the source say why, not which issue: no ``issue N`` anywhere in the packages, the
benches or testkit (history belongs in commit messages and docs/benchmarks.md)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("contracts", "stores", "agent", "controllers", "distributor", "orchestration", "reports", "workload", "sco",
           "bench", "testkit")
CITATION = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def test_no_source_comment_or_docstring_cites_an_issue_number() -> None:
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()[:80]}"
             for package in SOURCES for path in sorted((REPO / package).rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if CITATION.search(line)]
    assert found == [], "say why, not which issue:\n" + "\n".join(found)
