"""Small tables drawn in full: cells wrap and nothing scrolls out of sight (projectors, narrow windows).

They are plain HTML (`biaslens.figures_html.table_html`): a page of small tables costs the browser
no table component and no Arrow decoding, so results show sooner.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd
import streamlit as st

from biaslens.figures_html import table_html


def static_table(frame: pd.DataFrame, formats: Mapping[str, str] | None = None) -> None:
    """`frame` as a static table, without its index; `formats` maps columns to format strings; blanks for missing values."""
    st.html(table_html(frame, formats))


def labelled_table(frame: pd.DataFrame, columns: Mapping[str, tuple[str, str | None]]) -> None:
    """The `columns` of `frame` (name -> (label, format or None)), in that order, under their labels, as `static_table`."""
    present = [c for c in columns if c in frame]
    shown = frame.loc[:, present].set_axis([columns[c][0] for c in present], axis=1)
    static_table(shown, {columns[c][0]: fmt for c in present if (fmt := columns[c][1])})
