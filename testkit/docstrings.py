"""Which public functions and methods of a package have a docstring: what ``scripts/docstring_counts.py`` reports
and ``tests/test_docstrings.py`` holds every package to.

Public: a module-level function or a method of a module-level class whose name does not start with ``_``, in a
module whose own name does not either (generated ``*_pb2*`` files are left out), with ``@overload`` stubs skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

from testkit.paths import REPO

__all__ = ["DEFAULT", "missing", "modules", "public_functions"]

DEFAULT = ("controllers", "orchestration", "sco", "workload", "distributor")


def _public(name: str) -> bool:
    return not name.startswith("_")


def _overload(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    names = {d.id if isinstance(d, ast.Name) else d.attr if isinstance(d, ast.Attribute) else "" for d in
             node.decorator_list}
    return "overload" in names


def public_functions(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line, qualified name, has a docstring) for each public function and method of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name) and not _overload(node):
            yield node.lineno, node.name, ast.get_docstring(node) is not None
        elif isinstance(node, ast.ClassDef) and _public(node.name):
            for item in node.body:
                if (isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _public(item.name)
                        and not _overload(item)):
                    yield item.lineno, f"{node.name}.{item.name}", ast.get_docstring(item) is not None


def modules(package: str, root: Path = REPO) -> Iterator[Path]:
    """The package's modules that count: not generated, not private by name."""
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).parts
        if "_pb2" in path.name or any(p.startswith("_") and p != "__init__.py" for p in parts):
            continue
        yield path


def missing(packages: Sequence[str] = DEFAULT, root: Path = REPO) -> list[str]:
    """``file:line name`` of each public function of ``packages`` without a docstring, in file order."""
    return [f"{path.relative_to(root)}:{line} {name}" for package in packages for path in modules(package, root)
            for line, name, has in public_functions(path) if not has]
