"""Showing the engine's Altair figures in a page, and exporting them (SVG, PNG), the same way everywhere."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

import altair as alt
import streamlit as st

from biaslens.figures import charts as figures

from .memo import LRU
from .text import md

# The figures are built by biaslens.figures.charts from the engine's own frames, so their specs are known to be valid: the
# app builds and sends them without Altair's JSON-schema validation, which took ~0.2 s of a busy 2-core CPU per chart
# (most of a page's own script time). Charts of every pair of a dataset may exceed Altair's default 5,000 rows.
alt.utils.schemapi.disable_debug_mode()
alt.data_transformers.disable_max_rows()

#: This session's exported figures: (format, the chart's spec hash) -> SVG text or PNG bytes.
_EXPORTS = "charts.exports"
EXPORTS_KEPT = 12


def show(chart, key: str) -> None:
    """Full-width, with the figure's own projector-sized fonts and colour-blind-safe colours (no theme override)."""
    st.vega_lite_chart(chart.to_dict(validate=False), width="stretch", theme=None, key=key)


def export(chart: Any, fmt: Literal["svg", "png"], what: str = "This figure") -> str | bytes | None:
    """`chart` as SVG text or PNG bytes (`figures.to_svg` / `figures.to_png`, offline), drawn once per chart in this session.

    None if it cannot be drawn, with the reason in the page where its download button would be: an export never fails
    silently. `what` names the figure in that message ("The slide").
    """
    spec = json.dumps(chart.to_dict(validate=False), sort_keys=True, default=str)
    key = (fmt, hashlib.sha1(spec.encode()).hexdigest())
    memo: LRU = st.session_state.setdefault(_EXPORTS, LRU(EXPORTS_KEPT))
    found = memo.get(key)
    if found is not None:
        return found
    try:
        data = figures.to_svg(chart) if fmt == "svg" else figures.to_png(chart)
    except Exception as exc:  # vl-convert's error: its first lines say what Vega refused
        reason = " ".join(line.strip() for line in str(exc).splitlines()[:2] if line.strip()) or type(exc).__name__
        st.error(
            f"**{md(what)} could not be exported as {md(fmt.upper())}**: {md(reason)}. The rest of the page is unaffected; "
            "please report this with what the page shows.",
            icon=":material/broken_image:",
        )
        return None
    return memo.put(key, data)
