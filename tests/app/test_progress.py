"""Progress arithmetic: the time left and its wording (ui.progress)."""

from __future__ import annotations

import numpy as np
import pytest

from biaslens import explore, figures
from ui.progress import Eta, format_duration


def test_eta_uses_the_recent_rate():
    eta = Eta(window=10)
    assert eta.update(0.0, 0, 100) is None
    assert eta.update(1.0, 50, 100) == pytest.approx(1.0)  # cached chunks: fast
    eta.update(12.0, 60, 100)
    left = eta.update(22.0, 70, 100)  # 1 pair/s lately
    assert left == pytest.approx(30.0, rel=0.35)
    assert eta.update(23.0, 100, 100) == 0.0


def test_format_duration():
    assert [format_duration(s) for s in (0, 8.4, 65, 3725)] == ["0 s", "8 s", "1 min 05 s", "1 h 02 min"]


def test_the_inspector_slide_is_one_picture_in_png_and_svg(pair_inspection, tiny_bert):
    tokens = explore.token_table(pair_inspection, tiny_bert.decode_token)
    aligned = figures.aligned_token_frame(explore.aligned_columns(pair_inspection), tokens)
    drivers = {"AUL: margin": explore.margin_drivers(pair_inspection, "aul")}
    slide = figures.inspector_slide("A pair", "She is a nurse.", "He is a nurse.", aligned, drivers)
    png = figures.to_png(slide, scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = figures.to_svg(slide)
    assert "She is a nurse." in svg and "AUL: margin" in svg and "Log p (AUL term)" in svg


def test_the_head_grid_is_clickable_and_marks_the_chosen_head(pair_inspection):
    overview = explore.head_overview(pair_inspection, "stereo")
    spec = figures.head_overview_chart(overview, "heads").to_dict()
    assert [p["name"] for p in spec["params"]] == [figures.HEAD_SELECTION]  # Streamlit's on_select reads this selection
    assert len(spec["layer"]) == 1
    marked = figures.head_overview_chart(overview, "heads", selected=(1, 2)).to_dict()
    outline = marked["layer"][1]
    assert outline["mark"]["filled"] is False and len(marked["datasets"][outline["data"]["name"]]) == 1


def test_modified_tokens_are_marked_on_the_attention_axes(pair_inspection):
    table = explore.attention_table(pair_inspection, "stereo", hide_special=True)
    modified = table.loc[table["key_position"].isin(np.flatnonzero(pair_inspection.stereo.modified)), "key"].unique().tolist()
    assert modified
    spec = figures.attention_heatmap(table, "t", modified=modified, side="stereo").to_dict()
    axis = spec["encoding"]["x"]["axis"]
    assert figures.STEREO_COLOR == axis["labelColor"]["condition"]["value"] and modified[0] in axis["labelColor"]["condition"]["test"]
    assert "labelColor" not in figures.attention_heatmap(table, "t").to_dict()["encoding"]["x"]["axis"]
