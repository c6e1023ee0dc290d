"""The layout's rules hold: no import cycles among the modules of `biaslens` and of `ui` (lazy, function-level and
TYPE_CHECKING imports included, as grimp reads them), and the import-linter contracts of `.importlinter` are kept
(the layers of docs/architecture.md, no streamlit in biaslens, analyses without figures)."""

from __future__ import annotations

import os
import re

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


#: A branch on the kind of model, as issue 44 counts them: `kind == "causal"`, `.kind != "..."`, `isinstance(lm, CausalLM)`
#: (a metric's `pass_kind == "masked"` is not one).
KIND_BRANCH = re.compile(r'\bkind *== *"(causal|masked)"|isinstance\([^)]*(CausalLM|MaskedLM)|\.kind *!= *"')
#: Where a kind may be branched on: the kinds' own modules (what differs is declared there), and each place below, where
#: a page only words its text for the kind (docs/architecture.md lists them). Behaviour asks the model instead
#: (`LanguageModel.compat_modes`, `left_to_right`, `takes_first_token`, `first_token_policy`, `text_variants`, `fills_masks`).
KIND_MODULES = ("biaslens/engine/lm.py", "biaslens/engine/models.py", "biaslens/engine/causal.py")
ALLOWED_KIND_BRANCHES = {
    "ui/trust.py": 1,  # the conventions panel: what a convention is for a causal model, and for a masked one
    "pages/explorer.py": 1,  # the metrics' help: what their passes cost for a masked model
}


def kind_branches() -> dict[str, int]:
    """Per file of `biaslens/`, `ui/` and `pages/` outside the kinds' modules: the lines that branch on the kind."""
    found: dict[str, int] = {}
    for folder in ("biaslens", "ui", "pages"):
        for path in sorted((REPO / folder).rglob("*.py")):
            name = path.relative_to(REPO).as_posix()
            hits = sum(bool(KIND_BRANCH.search(line)) for line in path.read_text(encoding="utf-8").splitlines())
            if hits and name not in KIND_MODULES:
                found[name] = hits
    return found


def test_the_kind_of_model_is_branched_on_only_where_a_page_words_its_text():
    assert kind_branches() == ALLOWED_KIND_BRANCHES, "ask the model (a LanguageModel attribute) instead of testing its kind"


def test_the_kind_branch_pattern_finds_the_ways_of_testing_a_kind():
    lines = ['if lm.kind == "causal":', "isinstance(lm, CausalLM)", 'if lm.kind != "masked":', "x = isinstance(model, MaskedLM)"]
    assert all(KIND_BRANCH.search(line) for line in lines)
    others = ["if lm.takes_first_token:", 'if m.pass_kind == "unmasked":', 'x if m.pass_kind == "masked" else y', "kinds=('causal',)"]
    assert not any(KIND_BRANCH.search(line) for line in others)


#: The way `biaslens evaluate`'s options travel (tests/support/evaluate_path.py defines what is counted; docs/architecture.md,
#: "The way through evaluate"): at most this many entries into a file, this many of them upward, and `engine/evaluation.py`
#: entered at most twice (measured on main at 8a84d24, before issue 44's third part: 71 entries, 54 of them re-entries,
#: 4 upward, evaluation.py 3 times; after its first step 67, 50, 4 and twice; 66 after the store and zoo2 merges; after the
#: registry was asked once per scoring pass and the caveats computed in one place: 50, 36, 4 and twice).
MAX_ENTRIES, MAX_UPWARD, MAX_EVALUATION_ENTRIES = 50, 4, 2


def test_evaluate_s_options_take_a_short_way(model_dirs, tmp_path):
    from tests.support.evaluate_path import tiny_evaluate_argv, trace

    way = trace(tiny_evaluate_argv(model_dirs["bert-cased"], tmp_path / "out"))
    entries = way.entries_of()
    summary = "\n".join(way.lines())
    assert way.entries <= MAX_ENTRIES and way.upward <= MAX_UPWARD, summary
    assert entries["biaslens/engine/evaluation.py"] <= MAX_EVALUATION_ENTRIES, summary
    # The options are resolved once, before the run: the convention, the usable metrics and the scoring mode.
    resolving = [name for file, name, _, _ in way.links if name in ("resolve_run", "with_convention", "convention_metrics", "scoring_mode")]
    assert resolving == ["resolve_run", "with_convention", "convention_metrics", "scoring_mode"], summary


def test_the_way_counts_an_entry_into_another_file_and_a_call_back_up_the_layers():
    from tests.support.evaluate_path import EvaluatePath, _layer

    assert _layer("biaslens/cli/common.py") < _layer("biaslens/analyses/pipeline.py") < _layer("biaslens/engine/lm.py") < _layer("biaslens/errors.py")
    way = EvaluatePath(
        [
            ("biaslens/analyses/pipeline.py", "run", True, False),
            ("biaslens/engine/x.py", "f", True, False),
            ("biaslens/engine/x.py", "g", False, False),
        ]
        + [("biaslens/analyses/pipeline.py", "h", True, False), ("biaslens/cli/common.py", "load", True, True)]
    )
    assert (way.entries, way.reentries, way.upward) == (4, 1, 1)
    assert way.entries_of() == {"biaslens/analyses/pipeline.py": 2, "biaslens/engine/x.py": 1, "biaslens/cli/common.py": 1}
