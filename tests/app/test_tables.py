"""`ui.tables.table`, the app's one table, drawn alone with AppTest."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.support.app import html_of


def _margins_table(rows: int):
    def script(rows):
        import pandas as pd

        import ui.tables

        base = [0.00004, -0.00002, 0.03, -0.000003, 0.2]
        frame = pd.DataFrame({"pair_id": range(rows), "margin (A)": (base * rows)[:rows], "margin (B)": [0.00001] * rows})
        ui.tables.table(frame, select=rows > 60)  # static up to 60 rows; a longer (or clickable) one is interactive

    return AppTest.from_function(script, args=(rows,), default_timeout=60).run()


def test_a_table_s_margins_share_one_number_of_decimals():
    """Issue 30, item 7: one model's margins with 5 decimals beside another's with 6, in one table."""
    import re

    static = _margins_table(5)
    cells = re.findall(r'<td class="bl-num"[^>]*>([^<]*)</td>', html_of(static))
    margins = [c for c in cells if c[:1] in "+-−"]
    assert len(margins) == 10 and len({len(c.split(".")[1]) for c in margins}) == 1, margins
    assert "+0.000010" in margins and "-0.000003" in [m.replace("−", "-") for m in margins]

    interactive = _margins_table(70)
    config = json.loads(interactive.dataframe[0].proto.columns)
    formats = {config[c]["type_config"]["format"] for c in ("margin (A)", "margin (B)")}
    assert formats == {"%+.6f"}
