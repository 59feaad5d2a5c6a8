"""`sco contracts check` as a user runs it: exit codes, file:line, rule codes, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.builders import base
from tests.contracts.helpers import EXAMPLES, to_yaml, write_repo
from tests.support.cli import sco, sco_process


def test_the_example_repository_is_clean_and_exits_zero() -> None:  # the one smoke test of the real entry point
    result = sco_process("contracts", "check", str(EXAMPLES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "14 compiled, 0 refused; 0 error(s)" in result.stdout


def test_an_infeasible_contract_exits_one_and_names_the_rule_the_file_line_and_the_field(tmp_path: Path) -> None:
    text = to_yaml(base("T2", drain_budget_s=150))
    repo = write_repo(tmp_path / "repo", {"bad.yaml": text})
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("drain_budget_s"))
    result = sco("contracts", "check", str(repo), cwd=tmp_path)
    assert result.returncode == 1
    assert f"repo/bad.yaml:{line}: FEAS001 error: drain_budget_s=150:" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("text", "code", "needle"),
    [
        ("workload: x\n  version: [1\n", "SCH001", "malformed YAML"),
        (to_yaml(base("T2", colour="blue")), "SCH002", "unknown field 'colour'"),
        (to_yaml(base("T2", drain_budget_s="ninety")), "SCH003", "drain_budget_s='ninety'"),
        (to_yaml(base("T9")), "TIER001", "unknown tier 'T9'"),
        (to_yaml({k: v for k, v in base("T2").items() if k != "owner"}), "SCH004", "required field 'owner'"),
        ("- just\n- a list\n", "SCH001", "a contract is a YAML mapping"),
    ],
    ids=["malformed-yaml", "unknown-field", "wrong-type", "unknown-tier", "missing-field", "not-a-mapping"],
)
def test_bad_input_gets_a_one_line_error_with_a_code_never_a_traceback(
        tmp_path: Path, text: str, code: str, needle: str) -> None:
    repo = write_repo(tmp_path / "repo", {"c.yaml": text})
    result = sco("contracts", "check", str(repo), cwd=tmp_path)
    assert result.returncode == 1
    findings = [row for row in result.stdout.splitlines() if row.startswith("repo/c.yaml:")]
    assert len(findings) == 1, result.stdout
    assert f" {code} error: " in findings[0] and needle in findings[0]
    assert "Traceback" not in result.stdout + result.stderr and result.stderr == ""


def test_the_line_of_a_nested_field_is_reported(tmp_path: Path) -> None:
    text = to_yaml(base("T2", checkpoint={"mode": "periodic", "final_size_gib": 9}))
    repo = write_repo(tmp_path / "repo", {"c.yaml": text})
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "final_size_gib" in row)
    result = sco("contracts", "check", str(repo), cwd=tmp_path)
    # periodic mode writes no final checkpoint, so a large size is fine — the file compiles.
    assert result.returncode == 0, result.stdout
    text = to_yaml(base("T2", checkpoint={"final_size_gib": 9}))
    (repo / "c.yaml").write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "final_size_gib" in row)
    result = sco("contracts", "check", str(repo), cwd=tmp_path)
    assert result.returncode == 1 and f"repo/c.yaml:{line}: FEAS002" in result.stdout


def test_a_workload_declared_twice_is_refused(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"a.yaml": to_yaml(base("T5")), "b.yaml": to_yaml(base("T5"))})
    result = sco("contracts", "check", str(repo), cwd=tmp_path)
    assert result.returncode == 1 and "DUP001" in result.stdout and "repo/a.yaml" in result.stdout


def test_warnings_pass_unless_strict(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"a.yaml": to_yaml(base("T2", checkpoint={"interval_min": 240}))})
    assert sco("contracts", "check", str(repo)).returncode == 0
    strict = sco("contracts", "check", str(repo), "--strict")
    assert strict.returncode == 1 and "FEAS006 warning" in strict.stdout


def test_usage_errors_exit_two_with_one_line(tmp_path: Path) -> None:
    missing = sco("contracts", "check", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "is not a directory" in missing.stderr
    assert "REPO001: " in missing.stderr
    no_catalogue = write_repo(tmp_path / "repo", {"a.yaml": to_yaml(base("T5"))}, with_catalogue=False)
    result = sco("contracts", "check", str(no_catalogue))
    assert result.returncode == 2 and "--catalogue" in result.stderr and "REPO002: " in result.stderr
    bad_settings = write_repo(tmp_path / "repo2", {"a.yaml": to_yaml(base("T5"))})
    (bad_settings / "compiler.yaml").write_text("store_throughput_mib_s: -5\n")
    result = sco("contracts", "check", str(bad_settings))
    assert result.returncode == 2 and "compiler.yaml:1: store_throughput_mib_s" in result.stderr


def test_a_broken_catalogue_row_is_reported_with_its_line_and_column(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo", {"a.yaml": to_yaml(base("T5"))})
    rows = (repo / "pools.csv").read_text().splitlines()
    rows[3] = rows[3].replace(",16,0,", ",sixteen,0,", 1)
    (repo / "pools.csv").write_text("\n".join(rows) + "\n")
    result = sco("contracts", "check", str(repo))
    assert result.returncode == 2 and "pools.csv:4: column memory_gib='sixteen'" in result.stderr


def test_json_output_lists_every_finding_with_its_code(tmp_path: Path) -> None:
    import json

    repo = write_repo(tmp_path / "repo", {"a.yaml": to_yaml(base("T2", drain_budget_s=200)),
                                          "b.yaml": to_yaml(base("T5", workload="other"))})
    result = sco("contracts", "check", str(repo), "--format", "json")
    doc = json.loads(result.stdout)
    assert result.returncode == 1 and doc["ok"] is False and doc["compiled"] == ["other@1"]
    assert [f["code"] for f in doc["findings"]] == ["FEAS001"]


@pytest.mark.parametrize("layout", ["catalogue-only", "empty-workloads-folder", "only-a-dot-directory"])
def test_a_repository_with_no_contract_file_is_an_error_not_a_clean_pass(tmp_path: Path, layout: str) -> None:
    repo = write_repo(tmp_path / "repo", {})
    if layout == "empty-workloads-folder":
        (repo / "workloads").mkdir()
    if layout == "only-a-dot-directory":
        (repo / ".hidden").mkdir()
        (repo / ".hidden" / "a.yaml").write_text(to_yaml(base("T5")))
    result = sco("contracts", "check", str(repo))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stdout + result.stderr
    assert "REPO003: no contract files in " in result.stderr and result.stdout == ""
