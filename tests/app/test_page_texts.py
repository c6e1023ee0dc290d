"""What every page draws: no unfilled `{placeholder}` anywhere (issue 30, item 3: the Bias lab's header showed
"A {layers}-layer model with {hidden} hidden units … with {pairs} pairs")."""

from __future__ import annotations

import re

import pytest

from tests.support.app import PAGES, markdown_texts, no_exceptions, run_app

#: A Python format field as `str.format` would fill it: "{layers}", "{pairs}", "{0}".
PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}|\{\d+\}")
#: Braces that are the user's own syntax, in the one label that explains it (the lab's templates: "{name}", "{attribute}").
SYNTAX_LABELS = {"Templates, one per line, each with {name} and {attribute}"}


def unfilled(texts: list[str]) -> list[str]:
    """The texts with a placeholder outside `code` (the docs write the lab's template syntax as code: `{name}`)."""
    return [t for t in texts if t not in SYNTAX_LABELS and PLACEHOLDER.search(re.sub(r"(`+).+?\1", "", t, flags=re.S))]


def test_the_check_finds_an_unfilled_placeholder():
    assert unfilled(["A {layers}-layer model", "with {0} pairs"]) == ["A {layers}-layer model", "with {0} pairs"]
    assert unfilled(["A 2-layer model", "a set {1, 2}", "Templates, one per line, each with {name} and {attribute}", "`{name}`"]) == []


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_page_draws_an_unfilled_placeholder(app_env, page):
    at = run_app(page)
    no_exceptions(at)
    texts = markdown_texts(at) + [str(e.value) for e in at.get("text")]
    assert not unfilled(texts), unfilled(texts)
    assert at.title and at.caption  # the header was drawn (its description is a caption)
