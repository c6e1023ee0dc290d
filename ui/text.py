"""User-supplied text made safe for Streamlit markdown: `md` (shows as itself) and `code` (inline code).

The bottom of `ui/`: it imports nothing of the app, so every helper can escape what it writes. Pages use them
through `ui.feedback` (`ui.feedback.md`, `ui.feedback.code`), the module that shows messages.
"""

from __future__ import annotations

import re
from typing import Any

# Characters that can start markdown (or HTML) anywhere in a line: links and images ([ ]), HTML and
# autolinks (< >), entities (&), emphasis and strikethrough (* ~), code (`), LaTeX ($), escapes (\\).
_ALWAYS = re.compile(r"([\\`*\[\]<>&~$|])")
# An underscore opens emphasis only at a word's edge (not inside snake_case names).
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# A colon followed by text: emoji and icon shortcodes (:smile:, :material/x:) and URL schemes (http://). Streamlit
# replaces shortcodes after markdown has removed backslash escapes, so a zero-width space after the colon breaks them.
_COLON = re.compile(r":(?=\S)")
_SHORTCODE = re.compile(r":(?=[A-Za-z0-9_+/-])")
# Bare web addresses (www.x, http://x) and e-mail addresses (x@y.z, mailto:x@y.z, xmpp:x@y.z) that GitHub-flavoured
# markdown turns into links. Streamlit's markdown (remark-gfm) finds them in the text *after* backslash escapes are
# removed, so an escape cannot stop them: a zero-width space where the pattern needs a character breaks them
# ("www" then ".", "@" then a letter; the colon of "http://" gets one above, as every colon before text does).
_WWW = re.compile(r"(?i)(www)(?=\.)")
_AT = re.compile(r"@")
# What makes a line a heading, quote, list item or thematic break when it starts the text.
_LINE_START = re.compile(r"^(\s*)(\d*)([#>+=.)-])")


def md(text: Any) -> str:
    """User-supplied text (a sentence, file or model name, URL value, an engine message quoting them) made safe to put into
    Streamlit markdown: it shows as itself, never as a link, image, HTML, emphasis, icon or formula. One line: newlines become spaces.

    Every message path of the app uses this helper (`show_error`, page warnings and captions).
    """
    out = re.sub(r"\s*[\r\n]+\s*", " ", str(text))
    out = _ALWAYS.sub(r"\\\1", out)
    out = _EDGE_UNDERSCORE.sub(r"\\_", out)
    out = _SHORTCODE.sub(":\u200b", out)
    out = _COLON.sub(r"\\:", out)
    out = _WWW.sub("\\1\u200b", out)
    out = _AT.sub("@\u200b", out)
    return _LINE_START.sub(lambda m: m.group(1) + m.group(2) + "\\" + m.group(3), out)


def code(text: Any) -> str:
    """User-supplied text as inline code (e.g. a command line quoting a typed sentence): a fence longer than any run of
    backticks inside, so the text can never close it and continue as markdown. One line."""
    body = re.sub(r"\s*[\r\n]+\s*", " ", str(text))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    return f"{fence} {body} {fence}"
