"""The documentation in the app: the docs site's pages (docs/<name>.md, which ship with the project) drawn as the app's
Documentation page, and each page's link to its own (`docs_link`, under the page's description: `ui.feedback.header`).

`parts` turns a docs page's markdown into what the page draws: markdown (its links to other docs pages lead to those
pages in the app; `$` is a dollar, never mathematics), code blocks, and the screenshots as images.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from .text import md
from .views import DOC_PAGES

#: The docs site's pages, beside app.py (they ship with the project).
DOCS = Path(__file__).resolve().parents[1] / "docs"

_FENCE = re.compile(r"^```([\w+-]*)\n(.*?)^```[ \t]*$", re.M | re.S)
_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)[ \t]*$", re.M)
# A link (its text may hold code: [`score`](scoring.md)) or a code span, whichever starts first.
_LINK_OR_CODE = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)|(?P<ticks>`+).+?(?P=ticks)", re.S)


@dataclass(frozen=True)
class Part:
    """One piece of a docs page as the app draws it: `markdown`, `code` (`language` given) or `image` (`path`, `text` its caption)."""

    kind: str
    text: str
    language: str = ""
    path: Path | None = None


def doc_path(name: str) -> Path:
    return DOCS / f"{name}.md"


def doc_title(name: str) -> str:
    """A docs page's title: its first heading ("Bias lab"), else its name."""
    try:
        for line in doc_path(name).read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    except OSError:
        pass
    return name


def _link(match: re.Match) -> str:
    text, target = match.group(1), match.group(2)
    page = re.fullmatch(r"([\w-]+)\.md(#[\w-]+)?", target)
    if page and page.group(1) in DOC_PAGES:
        return f"[{text}](docs?page={page.group(1)})"  # the same docs page, in the app
    if re.match(r"https?://", target):
        return match.group(0)
    return text  # a file of the checkout (the API reference, the README): its name, no link that leads nowhere


def _markdown(text: str) -> str:
    """Prose of a docs page for `st.markdown`: links to docs pages within the app, and `$` a dollar outside code spans."""
    out, last = [], 0
    for found in _LINK_OR_CODE.finditer(text):
        out.append(text[last : found.start()].replace("$", "\\$"))
        out.append(_link(found) if found.group(2) else found.group(0))
        last = found.end()
    out.append(text[last:].replace("$", "\\$"))
    return "".join(out)


def parts(markdown: str) -> list[Part]:
    """A docs page's markdown as the pieces the app draws, in order."""
    out: list[Part] = []

    def prose(text: str) -> None:
        last = 0
        for image in _IMAGE.finditer(text):
            if text[last : image.start()].strip():
                out.append(Part("markdown", _markdown(text[last : image.start()])))
            out.append(Part("image", image.group(1), path=DOCS / image.group(2)))
            last = image.end()
        if text[last:].strip():
            out.append(Part("markdown", _markdown(text[last:])))

    last = 0
    for fence in _FENCE.finditer(markdown):
        prose(markdown[last : fence.start()])
        out.append(Part("code", fence.group(2).rstrip("\n"), language=fence.group(1) or "text"))
        last = fence.end()
    prose(markdown[last:])
    return out


def draw(name: str) -> None:
    """Draw the docs page `name` (a name of `DOC_PAGES`)."""
    try:
        text = doc_path(name).read_text(encoding="utf-8")
    except OSError:
        st.info(f"The documentation is not in this installation ({md(doc_path(name))} is missing).", icon=":material/menu_book:")
        return
    text = re.sub(r"\A# [^\n]*\n", "", text.lstrip())  # its title: the page's own (`doc_title`)
    for part in parts(text):
        if part.kind == "code":
            st.code(part.text, language=part.language)
        elif part.kind == "image":
            if part.path is not None and part.path.is_file():
                st.image(str(part.path), caption=part.text)
        else:
            st.markdown(part.text)


def docs_link(name: str) -> None:
    """Under a page's description: a link to its docs page (`name`, of `DOC_PAGES`), shown in the app (the Documentation page)."""
    st.page_link(
        "pages/docs.py",
        label=f"Documentation: {md(doc_title(name))}",
        icon=":material/menu_book:",
        query_params={"page": name},
        help=f"What this page shows and how to use it: docs/{md(name)}.md, in the app.",
    )


__all__ = ["DOCS", "Part", "doc_title", "docs_link", "draw", "parts"]
