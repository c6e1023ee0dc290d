"""Showing the engine's Altair figures in a page, the same way everywhere."""

from __future__ import annotations

import altair as alt
import streamlit as st

# The figures are built by biaslens.figures.charts from the engine's own frames, so their specs are known to be valid: the
# app builds and sends them without Altair's JSON-schema validation, which took ~0.2 s of a busy 2-core CPU per chart
# (most of a page's own script time). Charts of every pair of a dataset may exceed Altair's default 5,000 rows.
alt.utils.schemapi.disable_debug_mode()
alt.data_transformers.disable_max_rows()


def show(chart, key: str) -> None:
    """Full-width, with the figure's own projector-sized fonts and colour-blind-safe colours (no theme override)."""
    st.vega_lite_chart(chart.to_dict(validate=False), width="stretch", theme=None, key=key)
