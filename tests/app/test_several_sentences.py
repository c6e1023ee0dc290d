"""The pair inspector's "Several sentences" (ui/several.py), with AppTest: any number of sentences typed or pasted,
drawn aligned token by token in strips, their tables and downloads; bad input said in place."""

from __future__ import annotations

import numpy as np

from biaslens import score
from tests.support.app import html_of, no_exceptions, run_app, tables, texts

S = "inspector."
THREE = "Women don't know how to drive.\nMen don't know how to drive.\n\nPeople don't <b>know</b> how to drive.\n"


def open_texts(at):
    at.button_group(key=S + "source").set_value("texts").run()
    return at


def submit(at, text: str, variant: str | None = None):
    at.text_area(key=S + "texts.input").set_value(text)
    if variant is not None:
        at.button_group(key=S + "texts.variant").set_value(variant)
    next(b for b in at.button if b.label == "Score these sentences").click().run()
    return at


def test_any_number_of_sentences_aligned_in_strips_with_their_tables(app_env, tiny_bert):
    at = open_texts(run_app())
    no_exceptions(at)
    assert "an example is ready" in texts(at.info)
    submit(at, THREE)
    no_exceptions(at)
    page = html_of(at)
    lines = page.count('class="bl-strips"')  # the strips go on in lines, each headed by the sentences' numbers
    assert lines >= 1 and page.count('class="bl-slab"') == lines and page.count('class="bl-scol"') >= 8
    assert "&lt;b&gt;" in page and "<b>know" not in page  # typed text is text, never markup
    expected = score(tiny_bert, [line for line in THREE.splitlines() if line.strip()])
    sentences = next(t for t in tables(at) if "Logprob sum" in t.columns)
    assert len(sentences) == 3
    np.testing.assert_allclose(sentences["Logprob sum"], expected.sequences()["logprob_sum"], atol=1e-3)
    assert {"Tokens (CSV)", "Words (CSV)", "Sentences (CSV)"} <= {b.label for b in at.get("download_button")}
    assert "pair" not in at.query_params


def test_the_reading_and_the_shading_can_change(app_env, tiny_bert):
    at = submit(open_texts(run_app()), "The nurse was tired.\nThe doctor was tired.", variant="unmasked")
    no_exceptions(at)
    assert "nothing masked, one pass" in texts(at.caption)
    at.button_group(key=S + "texts.measure").set_value("entropy").run()
    no_exceptions(at)
    assert "Shaded by entropy" in html_of(at)


def test_bad_sentences_are_said_in_place(app_env):
    at = open_texts(run_app())
    submit(at, "fine.\nbad\x00line")
    no_exceptions(at)
    assert "Line 2 contains the control character U+0000" in texts(at.error)
    submit(at, "\n".join(f"Sentence {k}." for k in range(101)))
    assert "101 sentences: this page scores up to 100" in texts(at.error)
