"""Showing the engine's Altair figures in a page, the same way everywhere."""

from __future__ import annotations

import streamlit as st


def show(chart, key: str) -> None:
    """Full-width, with the figure's own projector-sized fonts and colour-blind-safe colours (no theme override)."""
    st.altair_chart(chart, width="stretch", theme=None, key=key)
