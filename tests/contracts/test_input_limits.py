"""The compiler's input bounds: a hostile contract file costs milliseconds and gets a code, never a hang."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from contracts.compiler import check_repo, check_text
from contracts.findings import Finding
from contracts.settings import CompilerSettings
from contracts.yamlsource import MAX_FILE_BYTES, load_yaml
from testkit.builders import base
from tests.contracts.helpers import catalogue, codes, to_yaml, write_repo
from tests.support.cli import sco

ALIAS_BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
) + "\n"


def _check(text: str) -> list[Finding]:
    compiled, findings = check_text(text, "bomb.yaml", catalogue(), CompilerSettings())
    assert compiled is None
    return findings


def test_the_481_byte_alias_bomb_is_refused_in_under_a_second_and_50_mb() -> None:
    assert len(ALIAS_BOMB.encode()) <= 481
    tracemalloc.start()
    started = time.process_time()
    try:
        findings = _check(ALIAS_BOMB)
        spent = time.process_time() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert codes(findings) == ["SRC004"] and findings[0].file == "bomb.yaml" and findings[0].line > 1
    assert spent < 1.0, f"{spent:.2f} s of CPU"
    assert peak < 50 * 2**20, f"{peak / 2**20:.1f} MiB peak"


def test_few_aliases_that_expand_to_a_huge_document_are_refused_by_the_expansion_bound() -> None:
    text = "a: &a [1,2,3,4,5,6,7,8,9,10]\n" + "".join(
        f"{c}: &{c} [" + ",".join([f"*{p}"] * 10) + "]\n" for p, c in zip("abcd", "bcde", strict=True))
    started = time.process_time()
    findings = _check(text)
    assert codes(findings) == ["SRC005"] and "expands to more than" in findings[0].rule
    assert time.process_time() - started < 1.0


def test_a_few_ordinary_aliases_are_still_accepted() -> None:
    text = to_yaml(base("T2")) + "eligible:\n  halls: &halls [r1-h1, r1-h2, r1-h3]\n  sizes: *halls\n"
    data, _ = load_yaml(text, "ok.yaml")
    assert data["eligible"]["sizes"] == ["r1-h1", "r1-h2", "r1-h3"]


def test_a_hundred_thousand_nested_brackets_get_a_code_not_a_recursion_error() -> None:
    text = "workload: " + "[" * 100_000 + "]" * 100_000 + "\n"
    findings = _check(text)
    assert codes(findings) == ["SRC003"] and "nesting deeper than" in findings[0].rule


def test_a_file_above_the_size_limit_is_refused_and_the_other_files_are_still_checked(tmp_path: Path) -> None:
    big = to_yaml(base("T2", workload="big-one")) + "#" * MAX_FILE_BYTES + "\n"
    repo = write_repo(tmp_path / "repo", {"big.yaml": big, "good.yaml": to_yaml(base("T2"))})
    result = check_repo(repo, display_root=tmp_path)
    assert [(f.code, f.file) for f in result.errors] == [("SRC002", "repo/big.yaml")]
    assert [w.contract.workload for w in result.workloads] == ["test-workload"]


def test_a_raw_nul_or_invalid_utf8_names_the_file_and_line_and_the_check_continues(tmp_path: Path) -> None:
    good = to_yaml(base("T2"))
    repo = write_repo(tmp_path / "repo", {"good.yaml": good})
    (repo / "nul.yaml").write_bytes(b"workload: a\nowner: b\0c\n")
    (repo / "latin1.yaml").write_bytes(b"workload: a\n\nowner: caf\xe9\n")
    result = sco("contracts", "check", str(repo), cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert "repo/nul.yaml:2: SRC001 error: " in result.stdout and "NUL byte" in result.stdout
    assert "repo/latin1.yaml:3: SRC001 error: " in result.stdout and "not UTF-8" in result.stdout
    assert "3 contract file(s): 1 compiled, 2 refused" in result.stdout


def test_a_control_character_yaml_forbids_is_named_with_its_line() -> None:
    findings = _check("workload: a\nowner: \x07bell\n")
    assert codes(findings) == ["SRC001"] and findings[0].line == 2


@pytest.mark.parametrize("field", ["workload", "partition", "owner"])
def test_a_name_with_a_trailing_newline_is_refused(field: str) -> None:
    good = base("T2")
    compiled, findings = check_text(to_yaml({**good, field: good[field] + "\n"}), "c.yaml", catalogue(),
                                    CompilerSettings())
    assert compiled is None and codes(findings) == ["SCH003"] and findings[0].field == field


def test_a_symlink_to_a_file_outside_the_repository_is_refused_without_echoing_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("root: $6$very-secret-hash\n", encoding="utf-8")
    repo = write_repo(tmp_path / "repo", {"good.yaml": to_yaml(base("T2"))})
    os.symlink(secret, repo / "linked.yaml")
    os.symlink(repo / "good.yaml", repo / "inside.yml")  # a link that stays inside is read as usual
    result = sco("contracts", "check", str(repo), cwd=tmp_path)
    assert "repo/linked.yaml:1: SRC006 error: " in result.stdout and "outside the repository" in result.stdout
    assert "very-secret" not in result.stdout + result.stderr
    assert "DUP001" in result.stdout  # inside.yml was read: the same workload twice


def test_an_unknown_field_never_echoes_its_value_in_full() -> None:
    long_value = "s3cr3t" * 100
    compiled, findings = check_text(to_yaml(base("T2", colour=long_value)), "c.yaml", catalogue(),
                                    CompilerSettings())
    assert compiled is None and codes(findings) == ["SCH002"]
    shown = findings[0].render()
    assert long_value not in shown and "(600 characters)" in shown


def test_a_mistyped_long_name_is_clipped_in_the_rule_too() -> None:
    compiled, findings = check_text(to_yaml(base("T2", workload="X" * 5000)), "c.yaml", catalogue(),
                                    CompilerSettings())
    assert compiled is None and codes(findings) == ["SCH003"]
    assert len(findings[0].render()) < 600
