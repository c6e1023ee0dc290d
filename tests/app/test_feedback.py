"""ui.feedback.md / code: user text shown in markdown stays text (issue 17). The browser test checks the rendering."""

from __future__ import annotations

import pytest

from ui.feedback import code, explain, md
from biaslens.errors import ModelLoadError


@pytest.mark.parametrize(
    "text, escaped",
    [
        ("[Session expired](http://evil.example/login)", "\\[Session expired\\](http\\:\u200b//evil.example/login)"),
        ("![i](x.png)", "!\\[i\\](x.png)"),
        ("<img src=x>", "\\<img src=x\\>"),
        ("**bold** _it_ ~s~ `c` $x$ a|b &amp;", "\\*\\*bold\\*\\* \\_it\\_ \\~s\\~ \\`c\\` \\$x\\$ a\\|b \\&amp;"),
        (":material/home: :smile:", "\\:\u200bmaterial/home: \\:\u200bsmile:"),
        ("# title", "\\# title"),
        ("- item", "\\- item"),
        ("1. item", "1\\. item"),
        ("> quote", "\\> quote"),
        ("line one\n\nline two", "line one line two"),
        ("www.evil.example a@b.example", "www\u200b.evil.example a@\u200bb.example"),
    ],
)
def test_markdown_is_escaped(text, escaped):
    assert md(text) == escaped


@pytest.mark.parametrize(
    "text",
    [
        "mine.csv has 6 rows; this server accepts at most 5 (BIASLENS_MAX_UPLOAD_ROWS).",
        "BIASLENS_MAX_MODELS='many' is not a whole number",
        "row 2: sent_more is empty",
    ],
)
def test_plain_messages_are_unchanged(text):
    assert md(text) == text


def test_engine_messages_are_escaped_and_hints_kept():
    message, hint = explain(ModelLoadError("Model folder [x](http://e.example) does not exist."))
    assert message == "Model folder \\[x\\](http\\:\u200b//e.example) does not exist."
    assert hint is None


@pytest.mark.parametrize("text, fenced", [("a `b` c", "`` a `b` c ``"), ("x ``` y", "```` x ``` y ````"), ("one\ntwo", "` one two `")])
def test_code_spans_cannot_be_closed_by_the_text(text, fenced):
    assert code(text) == fenced
