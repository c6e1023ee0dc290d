"""Exports: spreadsheet formula injection neutralised, numbers untouched, JSON without NaN."""

import io
import json
import math

import pandas as pd

from biaslens.data.export import atomic_write, neutralize_cell, safe_csv, to_json


def test_formula_cells_are_neutralised_and_numbers_are_not():
    frame = pd.DataFrame(
        {"sent": ['=HYPERLINK("x")', "+1", "-2 people", "@SUM(A1)", "\tTab", "plain", "a=b"], "score": [-1.5, 2.0, -3.0, 0.0, 1.0, 2.0, 3.0]}
    )
    back = pd.read_csv(io.StringIO(safe_csv(frame)))
    assert back["sent"].tolist() == ['\'=HYPERLINK("x")', "'+1", "'-2 people", "'@SUM(A1)", "'\tTab", "plain", "a=b"]
    assert back["score"].tolist() == frame["score"].tolist()


def test_neutralize_leaves_non_text_alone():
    assert neutralize_cell(-5) == -5
    assert neutralize_cell(None) is None


def test_json_has_no_nan(tmp_path):
    text = to_json({"a": math.nan, "b": [1.0, float("inf")], "c": {"d": 2}})
    assert json.loads(text) == {"a": None, "b": [1.0, None], "c": {"d": 2}}
    path = atomic_write(tmp_path / "sub" / "x.json", text)
    assert json.loads(path.read_text()) == json.loads(text)
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]  # no temp file left
