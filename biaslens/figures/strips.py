"""Any number of texts token by token, aligned: the strips that `biaslens.score`'s tables draw (notebooks, the app).

Each text is a strip of its tokens (or words), one cell each, shaded by a measure (darker: less likely, more
surprising, more uncertain) with the value under the token. The strips are aligned column by column: a token
every text shares sits in one column, and where texts differ (a minimal pair's changed words) their tokens are
side by side in the columns between, marked; a dot marks a text with no token there. Plain HTML and CSS, like
the pair inspector's charts (`figures.html`): the browser lays it out like text, columns wrap at any width, and
every value of a token shows on hover. Texts, tokens and labels are escaped, never markup.
"""

from __future__ import annotations

import difflib
import html
import math
from typing import Any, Sequence

import pandas as pd

from biaslens.engine.words import BYTE_MARK, display_token
from biaslens.figures.charts import NEUTRAL_COLOR, STEREO_COLOR

#: Measures a strip can be shaded by: column -> (name, True when a higher value is "darker", number format).
STRIP_MEASURES: dict[str, tuple[str, bool, str]] = {
    "logprob": ("log p", False, "{:.2f}"),
    "surprisal": ("surprisal", True, "{:.2f}"),
    "logprob_bits": ("log₂ p", False, "{:.2f}"),
    "surprisal_bits": ("surprisal (bits)", True, "{:.2f}"),
    "entropy": ("entropy", True, "{:.2f}"),
    "entropy_bits": ("entropy (bits)", True, "{:.2f}"),
    "rank": ("rank", True, "{:,.0f}"),
}
#: Most texts one drawing shows (the rest are said to be left out).
MAX_STRIPS = 60
#: About how wide (px) one line of columns may be before the strips go on below, the texts' numbers first again: what a
#: 1024 px window's main column holds. A cell's width is estimated from its characters (`CHAR_PX`, `SMALL_CHAR_PX` for
#: the value under it, `CELL_PX` its padding, border and gap); a line that is wider still wraps in the browser.
LINE_WIDTH = 500
CHAR_PX, SMALL_CHAR_PX, CELL_PX = 9.5, 6.5, 17.0
_RGB = tuple(int(STEREO_COLOR[k : k + 2], 16) for k in (1, 3, 5))

_STYLE = (
    "<style>"
    ".bl-strips{display:flex;flex-wrap:wrap;align-items:flex-start;row-gap:0.8rem;column-gap:3px;margin:0.3rem 0 0.5rem 0;"
    "font-size:1.02rem;max-width:100%}"
    ".bl-scol{display:flex;flex-direction:column;gap:4px}"
    ".bl-scell{display:flex;flex-direction:column;align-items:center;justify-content:center;min-width:1.6rem;height:2.55rem;"
    "padding:1px 6px;border-radius:5px;border:1px solid #e2e2e2;white-space:nowrap;line-height:1.15}"
    ".bl-scell small{font-size:0.7rem;color:#333;font-variant-numeric:tabular-nums}"
    f".bl-sdiff{{border:2px solid {NEUTRAL_COLOR};font-weight:700}}"
    ".bl-sgap{border-color:transparent;color:#bbb}"
    ".bl-slab{display:flex;flex-direction:column;gap:4px;font-size:0.8rem;font-weight:600;color:#555;padding-right:0.4rem}"
    ".bl-slab span{height:2.55rem;display:flex;align-items:center;justify-content:flex-end;border:1px solid transparent;padding:1px 0}"
    ".bl-snote{font-size:0.82rem;color:#555;margin:0.1rem 0 0.3rem 0}"
    "</style>"
)


def align_strips(sequences: Sequence[Sequence[str]]) -> list[list[int | None]]:
    """Columns of aligned items: each column holds, per sequence, the index of its item there or None.

    The first sequence gives the first columns; each next one is matched to the columns so far
    (`difflib`, by the first item that opened each column): matched items join their column, a replaced
    stretch is paired one by one with the columns it replaces, and the items left over open new columns
    in place. Every item of every sequence is in exactly one column, in order.
    """
    columns: list[list[int | None]] = []
    keys: list[str] = []
    for s, items in enumerate(sequences):
        if s == 0:
            columns = [[k] for k in range(len(items))]
            keys = list(items)
            continue
        new_columns: list[list[int | None]] = []
        new_keys: list[str] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, keys, list(items), autojunk=False).get_opcodes():
            pairs = min(i2 - i1, j2 - j1) if tag in ("equal", "replace") else 0
            for c in range(i1, i2):
                joined = j1 + (c - i1) if c - i1 < pairs else None
                new_columns.append([*columns[c], joined])
                new_keys.append(keys[c])
            for j in range(j1 + pairs, j2):
                new_columns.append([None] * s + [j])
                new_keys.append(items[j])
        columns, keys = new_columns, new_keys
    return columns


def _shade(value: float, low: float, high: float, darker_when_higher: bool, log: bool) -> str:
    if not math.isfinite(value):
        return "#fafafa"
    if log:
        value, low, high = (math.log10(max(v, 1.0)) for v in (value, low, high))
    t = 0.5 if high <= low else (value - low) / (high - low)
    t = t if darker_when_higher else 1.0 - t
    return f"rgba({_RGB[0]},{_RGB[1]},{_RGB[2]},{0.06 + 0.62 * min(max(t, 0.0), 1.0):.3f})"


def strips_html(
    frame: pd.DataFrame,
    *,
    unit: str = "token",
    measure: str = "logprob",
    labels: Sequence[str] | None = None,
    extra: Sequence[str] = (),
    max_strips: int = MAX_STRIPS,
    line_width: int = LINE_WIDTH,
) -> str:
    """The texts of a tokens or words table (`TokenScores`, `WordScores`), aligned, shaded by `measure`.

    `unit` is the column holding each cell's text ("token": drawn as the characters it covers in its text, from the
    table's `start` / `end`, or "text" for words); `labels` names each text's strip (default: its `text_id`); `extra`
    columns go into each cell's tooltip. The columns go on in lines about `line_width` px wide, each headed by the labels.
    """
    if measure not in STRIP_MEASURES:
        raise ValueError(f"unknown measure {measure!r}; choose from {', '.join(STRIP_MEASURES)}")
    if measure not in frame:
        raise ValueError(f"the table has no {measure!r} column")
    name, higher_darker, fmt = STRIP_MEASURES[measure]
    ids = sorted(frame["text_id"].unique().tolist())
    shown_ids = ids[:max_strips]
    by_text: dict[Any, list[dict]] = {t: [] for t in shown_ids}
    for record in frame.to_dict("records"):
        if record["text_id"] in by_text:
            by_text[record["text_id"]].append(record)
    rows = list(by_text.values())
    texts = getattr(getattr(frame, "scoring", None), "texts", None)  # a `TokenScores`: each token as the text it covers
    shown = [[_shown(r, unit, texts) for r in text] for text in rows]
    columns = align_strips(shown)
    values = [v for v in map(_number, frame.loc[frame["text_id"].isin(shown_ids), measure]) if math.isfinite(v)]
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    names = list(labels) if labels is not None else [str(t) for t in shown_ids]
    side = '<div class="bl-slab">' + "".join(f"<span>{html.escape(n)}</span>" for n in names[: len(shown_ids)]) + "</div>"
    cells_html, widths = [], []
    for column in columns:
        present = [(s, k) for s, k in enumerate(column) if k is not None]
        same = len(present) == len(shown) and len({shown[s][k] for s, k in present}) == 1
        cells = []
        width = 0.0
        for s, k in enumerate(column):
            if k is None:
                cells.append('<span class="bl-scell bl-sgap" title="no token here">·</span>')
                continue
            row = rows[s][k]
            value = _number(row.get(measure))
            number = fmt.format(value) if math.isfinite(value) else "—"
            tip = _tooltip(row, shown[s][k], name, number, extra)
            css = "bl-scell" + ("" if same or len(shown) == 1 else " bl-sdiff")
            colour = _shade(value, low, high, higher_darker, measure == "rank")
            cells.append(
                f'<span class="{css}" style="background:{colour}" title="{tip}">{html.escape(shown[s][k]) or "&nbsp;"}<small>{number}</small></span>'
            )
            width = max(width, CHAR_PX * len(shown[s][k]), SMALL_CHAR_PX * len(number))
        cells_html.append(f'<div class="bl-scol">{"".join(cells)}</div>')
        widths.append(width + CELL_PX)
    # Lines of columns, each headed by the texts' numbers: a long text wraps onto lines that still say which strip is which.
    lines, line, used = [], [], 0.0
    for cell, width in zip(cells_html, widths):
        if line and used + width > line_width:
            lines.append(line)
            line, used = [], 0.0
        line.append(cell)
        used += width
    lines.append(line)
    label = f"Aligned {unit} strips of {len(shown_ids)} texts, shaded by {name}"
    drawn = "".join(f'<div class="bl-strips">{side}{"".join(cells)}</div>' for cells in lines)
    note = f"Shaded by {name}: darker is {'higher' if higher_darker else 'lower'}."
    if len(shown) > 1:
        note += " Outlined: where the texts differ."
    if len(ids) > len(shown_ids):
        note += f" The first {len(shown_ids):,} of {len(ids):,} texts are shown."
    return f'{_STYLE}<div role="figure" aria-label="{html.escape(label)}">{drawn}</div><div class="bl-snote">{html.escape(note)}</div>'


def _shown(row: dict, unit: str, texts: Sequence[str] | None) -> str:
    """A cell's text: a token as the characters it covers in its text (`start`, `end`: "café", not "ĠcafÃ©"; `BYTE_MARK`
    for a token holding some bytes of the character before it, "␣" for one of whitespace only), else as written."""
    if unit != "token":
        return str(row[unit])
    token = str(row["token"])
    if texts is None or "start" not in row or "end" not in row:
        return display_token(token)
    start, end = int(row["start"]), int(row["end"])
    if end > start:
        return texts[int(row["text_id"])][start:end]
    return "␣" if not token.strip("Ġ▁Ċ \n") else BYTE_MARK


def _number(value: Any) -> float:
    """`value` as a float; NaN for a missing or non-numeric one."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _tooltip(row: dict, shown: str, name: str, number: str, extra: Sequence[str]) -> str:
    lines = [f"{shown}: {name} {number}"]
    for column in extra:
        if column in row and row[column] is not None and not (isinstance(row[column], float) and math.isnan(row[column])):
            value = row[column]
            lines.append(f"{column}: {value:.4g}" if isinstance(value, float) else f"{column}: {value}")
    return html.escape("\n".join(lines), quote=True)


__all__ = ["MAX_STRIPS", "STRIP_MEASURES", "align_strips", "strips_html"]
