"""Count the public functions and methods of each package that have a docstring.

Public: a module-level function or a method of a module-level class whose name does not start with ``_``, in a
module whose own name does not either (generated ``*_pb2*`` files are left out), with ``@overload`` stubs skipped.

    python scripts/docstring_counts.py [PACKAGE ...]     # default: controllers orchestration sco workload distributor
    python scripts/docstring_counts.py --missing sco     # list what has none, file:line name
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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


def modules(package: str) -> Iterator[Path]:
    """The package's modules that count: not generated, not private by name."""
    for path in sorted((REPO / package).rglob("*.py")):
        parts = path.relative_to(REPO).parts
        if "_pb2" in path.name or any(p.startswith("_") and p != "__init__.py" for p in parts):
            continue
        yield path


def main(argv: list[str] | None = None) -> int:
    """Print ``package: documented/public (percent)`` per package; with ``--missing``, each undocumented one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", default=list(DEFAULT))
    parser.add_argument("--missing", action="store_true", help="list the public functions without a docstring")
    args = parser.parse_args(argv)
    for package in args.packages:
        total = documented = 0
        for path in modules(package):
            for line, name, has in public_functions(path):
                total += 1
                documented += has
                if args.missing and not has:
                    print(f"{path.relative_to(REPO)}:{line} {name}")
        share = documented / total * 100 if total else 100.0
        print(f"{package}: {documented}/{total} ({share:.0f} %)", file=sys.stderr if args.missing else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
