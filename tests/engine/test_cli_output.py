"""What the commands print reads well (issue 30, item 11): whole pairs in progress, metrics by their names, columns in
line whatever a name's length, and every file a run writes named."""

from __future__ import annotations

import io
import json
import re

from biaslens.cli import main
from biaslens.cli.common import LineProgress, progress_to
from biaslens.engine.metrics import METRICS
from tests.engine.test_cli_field import STEREOSET_LINES

KEYS = tuple(METRICS)


def _tables(text: str) -> list[list[str]]:
    """The text tables of a command's output: runs of lines from a header starting "metric" to the first blank or other line."""
    tables, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("metric"):
            rows = [line]
            for row in lines[i + 1 :]:
                if not row.strip() or row.strip().split()[0] not in {m.name.split()[0] for m in METRICS.values()}:
                    break
                rows.append(row)
            tables.append(rows)
    return tables


def assert_aligned(table: list[str]) -> None:
    """Every line of a table ends at the same column (its last column flush right) and no metric is named by its key."""
    assert len(table) >= 2, table
    assert len({len(line) for line in table}) == 1, "\n".join(table)
    for row in table[1:]:
        assert not set(row.split()) & set(KEYS) - {m.name for m in METRICS.values()}, row


def test_progress_counts_whole_pairs():
    out = io.StringIO()
    bar = LineProgress(200, "pair", "crows-pairs aul", interval=0, file=out)
    update = progress_to(bar)
    for done in (0.3, 1.7, 57.25, 200):
        update(done, 200)
    bar.close()
    printed = out.getvalue()
    assert "0.3" not in printed and "1.7" not in printed and not re.search(r"\d\.\d+/200", printed)
    assert "0/200 pairs" in printed and "1/200 pairs" in printed and "57/200 pairs" in printed and "done, 200/200 pairs" in printed


def test_evaluate_tables_name_metrics_line_up_and_every_file_is_named(model_dirs, tmp_path, capsys):
    data = tmp_path / "ss.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in STEREOSET_LINES) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["evaluate", "--model", str(model_dirs["bert-cased"]), "--dataset", str(data), "--metrics", "aul,pll_word_l2r", "--out", str(out)]
    assert main([*args, "--stereoset-scores", "--flags", "--no-cache"]) == 0
    printed = capsys.readouterr().out
    tables = _tables(printed)
    assert len(tables) == 3  # StereoSet's scores, flagged pairs with and without, the summary
    for table in tables:
        assert_aligned(table)
        assert any("PLL-word-l2r" in row for row in table) and not any(re.search(r"\b(aul|pll_word_l2r)\b", row) for row in table)
    wrote = next(line for line in printed.splitlines() if line.startswith("wrote "))
    for name in ("pairs.csv", "summary.json", "stereoset_scores.csv", "flags.csv", "flagged.csv"):
        assert name in wrote and (out / name).is_file()


def test_inspect_names_each_metric_once(model_dirs, capsys):
    assert main(["inspect", "--model", str(model_dirs["bert-cased"]), "He is a doctor.", "She is a doctor.", "--metrics", "aul,pll_word_l2r"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.split()[:1] == ["metric"])
    assert "key" not in header.split()
    rows = lines[lines.index(header) + 1 :]
    assert [r.split()[0] for r in rows[:2]] == ["AUL", "PLL-word-l2r"]


def test_compare_s_table_lines_up(model_dirs, tmp_path, capsys):
    data = tmp_path / "pairs.csv"
    data.write_text("sent_more,sent_less\nWomen can't drive.,Men can't drive.\nHe is a nurse.,She is a nurse.\n", encoding="utf-8")
    models = [str(model_dirs["bert-cased"]), str(model_dirs["roberta"])]
    args = ["compare", "--model", *models, "--dataset", str(data), "--metrics", "aul,pll_word_l2r", "--no-cache", "--resamples", "50"]
    assert main(args) == 0
    table, *stability = _tables(capsys.readouterr().out)  # the paired test, then the models' rank stability
    assert_aligned(table)
    assert table[0].rstrip().endswith(" p") and [r.split()[0] for r in table[1:]] == ["AUL", "PLL-word-l2r"]


def test_lab_evaluate_s_table_lines_up(tmp_path):
    from biaslens import lab
    from biaslens.cli.lab import format_report

    model = lab.train_lab_model(lab.LabSettings(corpus_size=600, steps=12, batch_size=32), cache_dir=tmp_path)
    report = lab.evaluate_lab(model, metrics=["aul", "pll_word_l2r"])
    (table,) = _tables(format_report(report))
    assert_aligned(table)
    assert [r.split()[0] for r in table[1:]] == ["AUL", "PLL-word-l2r"]
