"""User-supplied text made safe for Streamlit markdown: `md` (shows as itself) and `code` (inline code).

The bottom of `ui/`: it imports nothing of the app, so every helper can escape what it writes. Pages use them
through `ui.feedback` (`ui.feedback.md`, `ui.feedback.code`), the module that shows messages.
"""

from __future__ import annotations

import re
from typing import Any

from biaslens.data.export import escape_markdown


def md(text: Any) -> str:
    """User-supplied text (a sentence, file or model name, URL value, an engine message quoting them) made safe to put into
    Streamlit markdown: it shows as itself, never as a link, automatic link (www.x, x@y.z), image, HTML, emphasis, icon or
    formula. One line: newlines become spaces. The rules are `biaslens.data.export.escape_markdown` (the report's markdown
    uses them too).

    Every message path of the app uses this helper (`show_error`, page warnings and captions).
    """
    return escape_markdown(text)


def code(text: Any) -> str:
    """User-supplied text as inline code (e.g. a command line quoting a typed sentence): a fence longer than any run of
    backticks inside, so the text can never close it and continue as markdown. One line."""
    body = re.sub(r"\s*[\r\n]+\s*", " ", str(text))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    return f"{fence} {body} {fence}"
