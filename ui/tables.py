"""Every table of the app, drawn one way (`table`): the columns a reader came for first and always in sight, headers
for people, numbers written alike everywhere.

* **Small tables** (at most `STATIC_ROWS` rows) are plain HTML (`biaslens.figures.html.table_html`): headers and
  cells wrap, so every column stays in sight on a projector or in a 1024 px window, and a page of them costs the
  browser no table component and no Arrow decoding.
* **Tables a reader clicks** (a row opens its pair), sorts, or that are long are interactive (`st.dataframe`): the
  key result columns come first and are pinned (they stay in sight however far the table scrolls sideways), and
  the horizontal scroll bar is always visible (assets/app.css).

Headers come from `biaslens.figures.formatting.column_label` (`bias_type` is "Bias type", `aul_margin` "AUL margin"),
margins from `formatting.margin_formatter` (a sign that agrees with the verdict, one number of decimals for all of a table's
margins), unless the caller names them.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from biaslens.figures.html import CellFormat, table_html
from biaslens.figures.formatting import MARGIN, column_formats, column_label, margin_formatter, margin_printf

#: Tables up to this many rows are drawn in full (static HTML); longer ones scroll inside an interactive table.
STATIC_ROWS = 60
#: Height (px) of a long interactive table: about 12 rows, its scroll bar and its header.
TALL = 420
#: One line of text in an interactive table's cell (px), and the least row height at which Streamlit wraps text (4rem at 17 px, and a little).
LINE_PX = 21
WRAP_MIN_ROW = 70
#: An interactive table's header and default row (px), and its horizontal scroll bar, always shown (assets/app.css).
ROW_PX = 35
SCROLL_BAR_PX = 16


def _printf(fmt: str, values: Iterable[float]) -> str | None:
    """A format for `table_html` as the interactive table's printf format ("{:+.2f}" is "%+.2f")."""
    if fmt == MARGIN:
        return margin_printf(values)
    found = re.fullmatch(r"\{:(\+?),?(\.\d+[efgE%])\}", fmt)
    return f"%{found.group(1)}{found.group(2)}" if found else None


def table(
    frame: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    pin: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    formats: Mapping[str, str] | None = None,
    help: Mapping[str, str] | None = None,
    decimals: int = 2,
    select: bool = False,
    selection: Sequence[str] | None = None,
    sortable: bool = False,
    key: str | None = None,
    height: int | None = None,
    widths: Mapping[str, int] | None = None,
    wrap_lines: int | None = None,
) -> Any:
    """Draw `frame` (an engine frame, internal column names and all) as the app's table.

    `pin`: the key result columns, first and always in sight; then `columns` (default: all the others).
    `labels` overrides a header (default `column_label`); `formats` a column's format ("{:.1f}", or `MARGIN`;
    default: margins by `margin_formatter`, p-values to 3 significant digits, other floats to `decimals` places);
    `help` gives a header's tooltip. `select` makes the rows clickable: the interactive table's selection event is
    returned (`event.selection.rows`); `selection` names other selection modes instead (["multi-row", "single-cell"]:
    the leaderboard's rows to compare and cells to open); `sortable` keeps a small table interactive (click a header to
    sort); `key` is the interactive table's widget key. In an interactive table, `widths` fixes columns' widths (px) and
    `wrap_lines` lets text wrap onto that many lines a row (taller rows). Returns None for a static table.
    """
    shown = list(dict.fromkeys([*pin, *(columns if columns is not None else frame.columns)]))
    names = {c: (labels or {}).get(c) or column_label(str(c)) for c in shown}
    fmts = column_formats(frame, shown, formats, decimals=decimals)
    # A table's margins (one model's or several models' columns) share one number of decimals: enough for every sign.
    margins = [v for c, f in fmts.items() if f == MARGIN for v in np.asarray(pd.to_numeric(frame[c], errors="coerce"), dtype=float)]
    select = select or bool(selection)
    if not select and not sortable and len(frame) <= STATIC_ROWS:
        margin = margin_formatter(margins)
        cells: dict[str, CellFormat] = {names[c]: (margin if f == MARGIN else f) for c, f in fmts.items()}
        tips = {names[c]: text for c, text in (help or {}).items() if c in names}
        st.html(table_html(frame.loc[:, shown].set_axis([names[c] for c in shown], axis=1), cells, key=len(pin), help=tips))
        return None
    config: dict[str, Any] = {}
    for c in shown:
        common = {"label": names[c], "help": (help or {}).get(c), "pinned": c in pin, "width": (widths or {}).get(c)}
        if pd.api.types.is_bool_dtype(frame[c]):
            config[c] = st.column_config.CheckboxColumn(**common)
        elif pd.api.types.is_numeric_dtype(frame[c]):
            printf = _printf(fmts[c], margins if fmts[c] == MARGIN else frame[c]) if c in fmts else None
            config[c] = st.column_config.NumberColumn(**common, format=printf)
        else:
            config[c] = st.column_config.TextColumn(**common)
    options: dict[str, Any] = {"on_select": "rerun", "selection_mode": list(selection) if selection else "single-row"} if select else {}
    if wrap_lines:  # Streamlit wraps a cell's text only in rows taller than 4rem
        options["row_height"] = max(WRAP_MIN_ROW, LINE_PX * wrap_lines + 12)
    # A short table as tall as its rows and the scroll bar below them (Streamlit's own height leaves the bar over the last row).
    tall = height or (TALL if len(frame) > 10 else ROW_PX + options.get("row_height", ROW_PX) * max(len(frame), 1) + SCROLL_BAR_PX + 3)
    return st.dataframe(
        frame, hide_index=True, width="stretch", height=tall, column_order=shown, column_config=config, placeholder="—", key=key, **options
    )


__all__ = ["MARGIN", "STATIC_ROWS", "table"]
