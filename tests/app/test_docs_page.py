"""Each page's help leads to its documentation, shown in the app (issue 30, item 14): the docs site's pages ship with
the project, and the Documentation page draws them."""

from __future__ import annotations

import pytest

import ui.docs
from tests.support.app import no_exceptions, run_app, texts
from ui.views import DOC_PAGES

#: Each page, the docs page its header links to.
LINKED = {"inspector": "app", "explorer": "app", "compare": "app", "kurita": "kurita", "lab": "lab", "analyses": "analyses"}


@pytest.mark.parametrize("page", sorted(LINKED))
def test_each_page_s_header_links_to_its_documentation(app_env, page):
    at = run_app(page)
    no_exceptions(at)
    (link,) = [p for p in at.get("page_link") if "Documentation" in p.proto.label]
    name = LINKED[page]
    assert link.proto.label == f"Documentation: {ui.docs.doc_title(name)}"
    assert link.proto.page.endswith("docs") and f"page={name}" in link.proto.query_string
    assert ui.docs.doc_path(name).is_file()


@pytest.mark.parametrize("name", DOC_PAGES)
def test_the_documentation_page_draws_every_docs_page(app_env, name):
    at = run_app("docs", {"page": name})
    no_exceptions(at)
    assert at.session_state["docs.page"] == name and at.query_params.get("page", "app") == name  # (the default left out)
    drawn = texts(at.markdown)
    assert at.title[0].value == ui.docs.doc_title(name) and len(drawn) > 500
    assert ".md)" not in drawn and ".md#" not in drawn  # links to other docs pages lead to them in the app
    images = [p for p in ui.docs.parts(ui.docs.doc_path(name).read_text(encoding="utf-8")) if p.kind == "image"]
    assert len(at.get("image")) == len(images) and all(p.path is not None and p.path.is_file() for p in images)


def test_docs_markdown_becomes_the_app_s_parts():
    text = (
        "# Title\n\nSee [the CLI](cli.md#evaluate), [the API](reference/index.md), [a site](https://example.org) "
        "and `$HOME` costs $5.\n\n![A shot](images/inspector.png)\n\n```bash\necho $HOME\n```\nAfter."
    )
    parts = ui.docs.parts(text)
    assert [p.kind for p in parts] == ["markdown", "image", "code", "markdown"]
    assert "[the CLI](docs?page=cli)" in parts[0].text and "the API" in parts[0].text and "reference/index.md" not in parts[0].text
    assert "[a site](https://example.org)" in parts[0].text and "`$HOME`" in parts[0].text and "costs \\$5" in parts[0].text
    assert parts[1].text == "A shot" and parts[1].path == ui.docs.DOCS / "images" / "inspector.png"
    assert parts[2].text == "echo $HOME" and parts[2].language == "bash" and parts[3].text.strip() == "After."
