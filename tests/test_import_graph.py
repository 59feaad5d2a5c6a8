"""No import circles among our packages: every module's imports form a graph without cycles (grimp, the graph
import-linter builds). A function-level import counts, since it runs when the function does; so does an import
made only for annotations (``if TYPE_CHECKING:``): it never runs, but a circle through it is the same tangle of
modules that need each other, hidden from the interpreter only, so the graph is checked with and without them."""

from __future__ import annotations

import sys

import grimp

PACKAGES = ("contracts", "stores", "agent", "controllers", "distributor", "orchestration", "reports", "workload",
            "sco", "testkit", "bench")


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each sorted; empty when there is no circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in graph.modules:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(graph.modules):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_the_circle_finder_finds_a_circle_it_is_given() -> None:
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert circles(graph) == [["p.a", "p.b", "p.c"]]


def test_no_module_of_ours_imports_itself_through_a_circle() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None)
    assert circles(graph) == [], "break each circle: move what both sides need below them, or invert the call"


def test_no_circle_closes_through_an_import_made_only_for_annotations() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False, cache_dir=None)
    assert circles(graph) == [], ("break each circle: move the annotated type below both sides (or describe what "
                                  "one side reads of the other as a Protocol of its own); never annotate with Any")
