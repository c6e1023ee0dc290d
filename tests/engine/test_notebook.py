"""Results draw themselves in a notebook (`_repr_html_`): a pair, a dataset run and a comparison of models, as the
app's HTML, with every token and value in it and untrusted text escaped; `import biaslens` stays light."""

from __future__ import annotations

import dataclasses
import html
import subprocess
import sys

import pytest

from biaslens.data.datasets import Pair
from biaslens.engine import display
from biaslens.engine.evaluation import evaluate, inspect_pair
from tests.support import REPO

SCRIPT = "<script>alert('x')</script>"
LINK = "[click](http://evil.example)"
HOSTILE = (f"Women {SCRIPT} can't drive {LINK}.", f"Men {SCRIPT} can't drive {LINK}.")
PAIRS = [
    Pair(0, "custom", SCRIPT, "stereo", *HOSTILE),
    Pair(1, "custom", "age", "stereo", "Old people are slow.", "Young people are slow."),
    Pair(2, "custom", "age", "antistereo", "He cried at the film.", "She cried at the film."),
]


def assert_inert(page: str) -> None:
    """No hostile text became markup: no script element, no link, no event handler."""
    assert "<script" not in page.lower() and "<a " not in page and "href" not in page and "onerror" not in page


def test_a_pair_shows_its_tokens_chart_and_scores(tiny_bert):
    import biaslens  # noqa: F401  (the package root sets up the renderers; any import of biaslens runs it)
    from biaslens.figures.formatting import margin_formatter

    result = inspect_pair(tiny_bert, *HOSTILE, metrics=["aul", "aula", "cps", "sss"])
    page = result._repr_html_()
    assert page is not None and 'class="bl-align"' in page and 'role="figure"' in page and 'class="bl-table"' in page
    for detail in (result.stereo, result.anti):
        for token, special, shown in zip(detail.encoding.tokens, detail.encoding.special, detail.shown):
            if not special:  # each token as the text it covers ("c" for WordPiece's "##c")
                assert shown in detail.encoding.text and f">{html.escape(shown)}</span>" in page, token
    margin = margin_formatter(result.summary_frame()["margin"])  # the table's margins share one number of decimals
    for row in result.summary_frame().itertuples():
        assert f">{html.escape(row.metric)}</td>" in page
        assert html.escape(margin(row.margin)) in page and f">{row.stereo:.4f}</td>" in page
    assert html.escape(str(result.manifest["model"])) in page and result.manifest["dtype"] in page
    assert_inert(page)


@pytest.fixture(scope="module")
def runs(tiny_models):
    return {name: evaluate(tiny_models[family], PAIRS, ["aul", "cps"]) for name, family in ((SCRIPT, "bert-cased"), (LINK, "roberta"))}


def test_a_dataset_run_shows_its_summary_and_what_made_it(runs):
    result = runs[SCRIPT]
    result = dataclasses.replace(result, summary={**result.summary, "manifest": {**result.manifest, "model": SCRIPT, "revision": LINK}})
    page = result._repr_html_()
    assert page is not None
    for key, block in result.summary["metrics"].items():
        cells = [f"{block['bias_score']:.2f}", f"{block['ci_low']:.2f}", f"{block['ci_high']:.2f}", str(block["n"]), f"{block['token_accuracy']:.2f}"]
        assert all(f">{cell}</td>" in page for cell in cells), (key, cells)
    for value in (html.escape(SCRIPT), html.escape(LINK), result.manifest["dtype"], result.manifest["device"], "Bias score", "95% CI low"):
        assert value in page, value
    assert_inert(page)


def test_a_comparison_shows_its_table(runs):
    from biaslens.analyses.explore import compare_models

    comparison = compare_models(runs, "aul")
    page = comparison._repr_html_()
    assert page is not None
    for name, result in runs.items():
        block = result.summary["metrics"]["aul"]
        assert f">{html.escape(name)}</td>" in page and f">{block['bias_score']:.2f}</td>" in page
    assert f"{len(comparison.flips):,} of {len(PAIRS)}" in page and html.escape(SCRIPT) in page
    assert_inert(page)


def test_a_class_without_a_renderer_falls_back_to_its_repr():
    class Plain(display.HtmlRepr):
        pass

    assert Plain()._repr_html_() is None


def test_from_biaslens_import_is_enough_and_the_figures_load_only_when_shown(model_dirs):
    script = (
        "import sys\nimport biaslens\n"
        "light = sorted(m for m in ('torch', 'transformers', 'pandas', 'altair', 'biaslens.figures.notebook') if m in sys.modules)\n"
        "from biaslens import inspect_pair, load_model\n"
        f"result = inspect_pair(load_model({str(model_dirs['bert-cased'])!r}), 'Women can drive.', 'Men can drive.')\n"
        "before = 'biaslens.figures.notebook' in sys.modules\n"
        "page = result._repr_html_()\n"
        "print('LIGHT', light, 'BEFORE', before, 'SHOWN', 'bl-align' in page and 'bl-table' in page)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.stdout.splitlines()[-1:] == ["LIGHT [] BEFORE False SHOWN True"], proc.stdout + proc.stderr


def test_python_and_notebooks_warn_about_an_untrained_model_as_the_app_does(tiny_bert):
    """Issue 30, item 13: `evaluate()` on a random model returned `warnings == []` and no sanity entry, and its
    `_repr_html_` showed scores with no caveat, while the app and the CLI warn."""
    import biaslens
    from biaslens.lab.sanity_verdict import model_verdict

    verdict = model_verdict(tiny_bert)
    assert verdict.status == "untrained"
    run = biaslens.evaluate(tiny_bert, PAIRS[1:], ["aul"])
    assert run.manifest["sanity"]["status"] == "untrained" and run.manifest["sanity"]["message"] == verdict.message
    assert run.warnings[0] == f"{tiny_bert.name}: {verdict.message}"
    page = run._repr_html_()
    assert page is not None and "looks untrained: read these results as noise." in page
    assert page.index("looks untrained") < page.index("Bias score")  # above the scores, as the app's banner
    assert page.count(html.escape(verdict.message)) == 1

    pair = biaslens.inspect_pair(tiny_bert, "Old people are slow.", "Young people are slow.", metrics=["aul"])
    assert pair.manifest["sanity"]["status"] == "untrained" and pair.notes[0].endswith(verdict.message)
    assert "looks untrained: read these results as noise." in (pair._repr_html_() or "")

    # The engine's own functions (under the app and the CLI, which show the verdict themselves) stay as they were,
    # and the public ones take exactly their arguments.
    import inspect

    from biaslens.engine import evaluation
    from biaslens.lab import checked

    assert evaluate(tiny_bert, PAIRS[1:], ["aul"]).warnings == []
    for name in ("evaluate", "inspect_pair"):
        assert inspect.signature(getattr(checked, name)).parameters.keys() == inspect.signature(getattr(evaluation, name)).parameters.keys()
