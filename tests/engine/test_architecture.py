"""The layout's rules hold: no import cycles among the modules of `biaslens` and of `ui` (lazy, function-level and
TYPE_CHECKING imports included, as grimp reads them), and the import-linter contracts of `.importlinter` are kept
(the layers of docs/architecture.md, no streamlit in biaslens, analyses without figures)."""

from __future__ import annotations

import os

import grimp
import pytest

from tests.support import REPO


def import_cycles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """The strongly connected components of more than one module among `package`'s modules (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    inside = set(modules)
    edges = {m: sorted(d for d in graph.find_modules_directly_imported_by(m) if d in inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_through_three_modules():
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")):
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph, "p") == [["p.a", "p.b", "p.c"]]


@pytest.mark.parametrize("package", ["biaslens", "ui"])
def test_no_import_cycles(package):
    graph = grimp.build_graph(package, cache_dir=None)  # lazy and TYPE_CHECKING imports count
    assert import_cycles(graph, package) == [], f"import cycles in {package}/ (break them by moving code to its layer)"


def test_the_import_contracts_are_kept(monkeypatch):
    from importlinter.cli import lint_imports

    monkeypatch.chdir(REPO)
    assert os.path.exists(".importlinter")
    assert lint_imports(config_filename=".importlinter", no_cache=True) == 0, "run .venv/bin/lint-imports to see the broken contract"
