"""The command line's progress (bars on a terminal, plain lines in a log) and the model's caveats on stderr and in the manifests."""

from __future__ import annotations

import io
import json
import sys

import pandas as pd

from biaslens.cli import main
from biaslens.cli.common import LineProgress, Progress, model_caveats

from tests.support import FIXTURE_DATA as DATA


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_line_progress_writes_a_line_at_the_start_every_interval_and_at_the_end():
    clock, out = Clock(), io.StringIO()
    with LineProgress(100, "pair", "crows-pairs aul", interval=10, file=out, clock=clock) as bar:
        for step in range(100):
            clock.now = step * 0.5  # 50 s in all
            bar.n = step
            bar.refresh()
        bar.n = 100
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "crows-pairs aul: 0/100 pairs (0%), 0 s"
    assert len(lines) == 1 + 4 + 1  # start, at 10, 20, 30 and 40 s, end
    assert lines[1].startswith("crows-pairs aul: 20/100 pairs (20%), 10 s, about 40 s left")
    assert lines[-1] == "crows-pairs aul: done, 100/100 pairs (100%), 50 s"


def test_line_progress_without_a_total_bytes_and_postfix():
    clock, out = Clock(), io.StringIO()
    bar = LineProgress(None, "step", "training", interval=10, file=out, clock=clock)
    bar.update(3)
    bar.set_postfix(loss="4.800", refresh=False)
    clock.now = 12
    bar.update(2)
    bar.close()
    bar.close()  # once
    assert out.getvalue().splitlines() == [
        "training: 3 steps, 0 s",
        "training: 5 steps, 12 s, loss=4.800",
        "training: done, 5 steps, 12 s, loss=4.800",
    ]
    download = io.StringIO()
    with LineProgress(2_000_000, "B", "downloading x", file=download, clock=clock) as bytes_bar:
        bytes_bar.n = 1_000_000
        bytes_bar.refresh()
    assert download.getvalue().splitlines()[0] == "downloading x: 1.0 MB/2.0 MB (50%), 0 s"
    queries = io.StringIO()
    with LineProgress(8, "query", "kurita traits", file=queries, clock=clock) as q:
        q.n = 2.5
        q.refresh()
    # Whole queries done (an engine's fraction of one is none: issue 30, "0.3/200 pairs"), the share exact; no time left
    # guessed before 1 s has passed.
    assert queries.getvalue().splitlines()[0] == "kurita traits: 2/8 queries (31%), 0 s"
    silent = io.StringIO()
    with LineProgress(5, "pair", "other process", file=silent, disable=True) as off:
        off.update(5)
    assert silent.getvalue() == ""


def test_bars_on_a_terminal_or_with_the_flag_lines_otherwise(monkeypatch):
    import argparse

    class Stream(io.StringIO):
        def __init__(self, tty: bool):
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    monkeypatch.setattr(sys, "stderr", Stream(False))
    assert Progress.from_args(argparse.Namespace(progress=False)).bars is False
    assert isinstance(Progress.from_args(argparse.Namespace()).bar(3, "pair", "x"), LineProgress)
    assert Progress.from_args(argparse.Namespace(progress=True)).bars is True
    monkeypatch.setattr(sys, "stderr", Stream(True))
    assert Progress.from_args(argparse.Namespace(progress=False)).bars is True
    from tqdm.auto import tqdm

    bar = Progress(True).bar(3, "pair", "x")
    assert isinstance(bar, tqdm)
    bar.close()


def test_evaluate_in_a_log_writes_plain_lines_and_the_untrained_warning(model_dirs, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["evaluate", "--model", str(model_dirs["bert-cased"]), "--dataset", "crows-pairs", "--data-dir", str(DATA)]
    argv += ["--metrics", "aul", "--limit", "4", "--no-cache"]
    assert main([*argv, "--out", str(out)]) == 0  # capsys's stderr is not a terminal, as in a log
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert any(line.startswith("crows-pairs aul: done, 4/4 pairs (100%)") for line in lines), err
    warning = [line for line in lines if line.startswith("warning:") and "Looks untrained" in line]
    assert len(warning) == 1 and str(model_dirs["bert-cased"]) in warning[0], err
    manifest = json.loads((out / "summary.json").read_text())["manifest"]
    assert manifest["sanity"]["status"] == "untrained" and manifest["sanity"]["subject"] == "plain English"
    assert manifest["vocabulary"]["texts"] == 8 and manifest["vocabulary"]["mostly_unknown"] is False
    # --progress: tqdm's bar even in a log (carriage returns), and the same files.
    assert main([*argv, "--out", str(tmp_path / "forced"), "--progress"]) == 0
    forced = capsys.readouterr().err
    assert "\r" in forced and "pair/s" in forced
    pd.testing.assert_frame_equal(pd.read_csv(out / "pairs.csv"), pd.read_csv(tmp_path / "forced" / "pairs.csv"))


def test_inspect_warns_about_untrained_weights_and_unknown_words_and_prints_top5_tokens(model_dirs, capsys):
    model = str(model_dirs["bert-cased"])
    # mostly words the tiny vocabulary lacks, told apart by one word it knows
    assert main(["inspect", "--model", model, "日本語の文章 he です。", "日本語の文章 she です。", "--json"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and "Looks untrained" in warnings[0] and "out of this model's vocabulary" in warnings[1]
    out = json.loads(captured.out)
    assert out["manifest"]["sanity"]["status"] == "untrained" and out["manifest"]["vocabulary"]["mostly_unknown"] is True
    from biaslens.analyses.explore import display_token
    from biaslens.engine.models import load_model

    lm = load_model(model, device="cpu")
    row = out["stereo_tokens"][1]
    assert len(row["top_tokens"]) == 5 and row["top_tokens"] == [lm.decode_token(i) for i in row["top_ids"]]
    # The text table's top5 column: the same five tokens (as people read them), never ids.
    assert main(["inspect", "--model", model, "He is a doctor.", "She is a doctor.", "--json"]) == 0
    expected = [display_token(t) for t in json.loads(capsys.readouterr().out)["stereo_tokens"][1]["top_tokens"]]
    assert main(["inspect", "--model", model, "He is a doctor.", "She is a doctor."]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert next(line for line in lines if "position" in line).split()[-1] == "top5"
    he = next(line for line in lines if line.split()[:2] == ["1", "He"])
    assert he.split()[-5:] == expected


def test_model_caveats_say_nothing_for_a_model_that_looks_trained(tiny_bert, monkeypatch, capsys):
    import biaslens.analyses.sanity as sanity
    import biaslens.analyses.sanity as verdict

    ok = sanity.SanityReport(95.0, -0.2, -10.3, 74, 8, "ok", "Predicts plain English well.")
    monkeypatch.setattr(verdict, "model_verdict", lambda lm: ok)
    block = model_caveats(tiny_bert, ["The doctor is here.", "The nurse is here."])
    assert capsys.readouterr().err == ""
    assert block["sanity"]["status"] == "ok" and block["vocabulary"]["unknown"] == 0
    weak = sanity.SanityReport(30.0, -5.0, -10.3, 74, 8, "weak", "Predicts plain English poorly.")
    monkeypatch.setattr(verdict, "model_verdict", lambda lm: weak)
    model_caveats(tiny_bert, label="m")
    assert capsys.readouterr().err == "warning: m: Predicts plain English poorly.\n"
    model_caveats(tiny_bert, label="m", warn_verdict=False)
    assert capsys.readouterr().err == ""


def test_kurita_warns_and_records_the_verdict(model_dirs, tmp_path, capsys):
    words = tmp_path / "traits.txt"
    words.write_text("kind\nsmart\nlazy\n", encoding="utf-8")
    out = tmp_path / "k"
    assert (
        main(
            [
                "kurita",
                "--model",
                str(model_dirs["bert-cased"]),
                "--attributes",
                str(words),
                "--weat",
                "career_family",
                "--permutations",
                "50",
                "--data-dir",
                str(DATA),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert sum("Looks untrained" in line for line in err.splitlines() if line.startswith("warning:")) == 1
    assert "\r" not in err  # capsys is no terminal: plain lines
    assert json.loads((out / "traits_summary.json").read_text())["manifest"]["sanity"]["status"] == "untrained"
    weat = json.loads((out / "weat.json").read_text())["manifest"]
    assert weat["sanity"]["status"] == "untrained" and weat["method"] == "kurita2019-weat"


def test_report_warns_once_and_records_the_vocabulary(model_dirs, tmp_path, capsys):
    out = tmp_path / "r"
    assert (
        main(
            [
                "report",
                "--model",
                str(model_dirs["bert-cased"]),
                "--datasets",
                "crows-pairs",
                "--data-dir",
                str(DATA),
                "--analyses",
                "scores",
                "--metrics",
                "aul",
                "--limit",
                "6",
                "--no-cache",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert sum("Looks untrained" in line for line in err.splitlines() if line.startswith("warning:")) == 1
    assert any(line.endswith("bias scores: done, 6/6 pairs (100%), " + line.rsplit(", ", 1)[-1]) for line in err.splitlines()), err
    model = next(iter(json.loads((out / "manifest.json").read_text())["models"].values()))
    assert model["sanity"]["status"] == "untrained"
    assert model["manifest"]["vocabulary"]["texts"] == 12 and model["manifest"]["vocabulary"]["mostly_unknown"] is False
