"""A docstring on every public function of the packages the house style names (``testkit.docstrings`` counts
them; ``scripts/docstring_counts.py`` reports the shares)."""

from __future__ import annotations

from pathlib import Path

from testkit.docstrings import DEFAULT, missing


def test_every_public_function_of_the_documented_packages_has_a_docstring() -> None:
    found = missing(DEFAULT)
    assert found == [], "write a docstring (what it returns or does, and why a caller cares) for:\n" + "\n".join(found)


def test_a_public_function_or_method_without_a_docstring_is_listed_by_file_line_and_name(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        'from typing import overload\n'
        'def bare(): pass\n'
        'def told():\n    """Said."""\n'
        'def _private(): pass\n'
        '@overload\ndef over(x: int) -> int: ...\n'
        'class Box:\n    def open(self): pass\n    def _shut(self): pass\n'
        'class _Hidden:\n    def open(self): pass\n')
    (tmp_path / "pkg" / "_private.py").write_text("def bare(): pass\n")
    (tmp_path / "pkg" / "api_pb2.py").write_text("def bare(): pass\n")

    assert missing(["pkg"], root=tmp_path) == ["pkg/mod.py:2 bare", "pkg/mod.py:9 Box.open"]
