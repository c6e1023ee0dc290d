"""`biaslens score`: texts files in, token / word / text tables out; every bad input refused in one line before the
model loads; resumable through the result cache; the texts readers (biaslens.data.texts) and table writer."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from biaslens.cli import main
from biaslens.data.texts import read_texts
from biaslens.errors import DatasetError

TEXTS = ["The nurse was tired.", "A man drove home quickly", "=SUM(A1) is no formula here."]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    pd.DataFrame({"id": [1, 2, 3], "sentence": TEXTS}).to_csv(tmp_path / "texts.csv", index=False)
    (tmp_path / "texts.jsonl").write_text("".join(json.dumps({"text": t, "n": k}) + "\n" for k, t in enumerate(TEXTS)), encoding="utf-8")
    return tmp_path


def _read(path):
    if path.suffix == ".csv":
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    if path.suffix == ".jsonl":
        return pd.read_json(path, lines=True)
    return pd.read_parquet(path)


@pytest.mark.parametrize(("source", "column"), [("texts.txt", None), ("texts.csv", "sentence"), ("texts.jsonl", None)])
@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_score_writes_tokens_words_and_texts(model_dirs, files, source, column, suffix, capsys):
    from biaslens import load_model, score

    out = files / f"tokens{suffix}"
    argv = ["score", "--model", str(model_dirs["bert-cased"]), "--file", str(files / source), "--out", str(out), "--words", "--sequences"]
    assert main(argv + (["--column", column] if column else []) + ["--no-cache"]) == 0
    tokens, words, texts = _read(out), _read(files / f"tokens.words{suffix}"), _read(files / f"tokens.sequences{suffix}")
    expected = score(load_model(str(model_dirs["bert-cased"])), TEXTS)
    np.testing.assert_allclose(tokens["logprob"], expected["logprob"], atol=1e-5)
    assert tokens["text_id"].tolist() == expected["text_id"].tolist() and tokens["word"].tolist() == expected["word"].tolist()
    neutral = "'" if suffix == ".csv" else ""  # a spreadsheet never runs a cell of a CSV as a formula
    assert words["text"].tolist() == [(neutral if w.startswith("=") else "") + w for t in TEXTS for w in t.split()]
    np.testing.assert_allclose(texts["score"], expected.sequences()["score"], atol=1e-5)
    assert texts["text"].iloc[2] == neutral + TEXTS[2]
    printed = capsys.readouterr()
    assert "wrote" in printed.out and "nurse was tired" in printed.out and "scoring" in printed.err


def test_causal_options_bits_surprisal_prefix(files, causal_dirs):
    out = files / "tokens.csv"
    argv = ["score", "--model", str(causal_dirs["gpt2"]), "--file", str(files / "texts.txt"), "--out", str(out), "--no-cache"]
    assert main(argv + ["--first-token", "none", "--base", "2", "--surprisal", "--prefix", "She said:"]) == 0
    tokens = _read(out)
    assert {"logprob_bits", "surprisal_bits", "entropy_bits"} <= set(tokens.columns) and set(tokens["first_token"]) == {"none"}
    assert tokens["scored"].all()  # the prefix comes first: every token of the texts is predicted


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("ok.\n\nnext.\n", [], "texts.txt: line 2 is empty"),
        ("ok.\nbad\x00 text\n", [], "line 2 contains the control character U+0000 (NUL)"),
        ("nurse " * 700 + "\n", [], "line 1: the text has 702 tokens"),
        ("ok.\n", ["--column", "text"], "no columns: leave --column out"),
        ("ok.\n", ["--first-token", "bos"], "--first-token applies to causal models only"),
        ("ok.\n", ["--suffix", "a\x00b"], "--suffix contains the control character"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_the_model_loads(model_dirs, tmp_path, monkeypatch, capsys, content, extra, message):
    import biaslens.engine.models as models

    def never(*args, **kwargs):
        raise AssertionError("the model loaded")

    monkeypatch.setattr(models, "load_model", never)
    (tmp_path / "texts.txt").write_text(content, encoding="utf-8")
    argv = ["score", "--model", str(model_dirs["bert-cased"]), "--file", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "t.csv")]
    assert main(argv + extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize(
    ("name", "content", "extra", "message"),
    [
        ("t.csv", "id,sentence\n1,hi\n", [], "has no column 'text' (its columns: 'id', 'sentence')"),
        ("t.csv", "id,text\n1,hi\n2,\n", [], "line 3 has no text in column 'text'"),
        ("t.jsonl", '{"sentence": "hi"}\n', [], "line 1 has no 'text' key"),
        ("t.jsonl", '{"text": 3}\n', [], "line 1: 'text' is not text (int)"),
        ("t.jsonl", "[1]\n", [], "line 1 is not a JSON object"),
        ("t.xlsx", "x", [], "unknown kind of file '.xlsx'"),
        ("t.txt", "ok.\n", ["--out", "t.xlsx"], "--out t.xlsx: write a .csv, .jsonl or .parquet file"),
    ],
)
def test_bad_files_and_outputs_are_refused(model_dirs, tmp_path, monkeypatch, capsys, name, content, extra, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(content, encoding="utf-8")
    argv = ["score", "--model", str(model_dirs["bert-cased"]), "--file", name, *(extra or ["--out", "o.csv"])]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_causal_model_refuses_a_suffix_and_a_variant_before_it_loads(causal_dirs, files, capsys):
    base = ["score", "--model", str(causal_dirs["gpt2"]), "--file", str(files / "texts.txt"), "--out", str(files / "t.csv")]
    assert main(base + ["--suffix", "Then."]) == 2
    assert main(base + ["--variant", "original"]) == 2
    err = capsys.readouterr().err
    assert "--suffix: a causal model reads left to right" in err and "--variant original: a causal model" in err and "Loading" not in err


def test_an_interrupted_run_resumes_from_the_result_cache(model_dirs, files, monkeypatch, capsys):
    from biaslens.engine import text_scores

    many = files / "many.txt"
    many.write_text("".join(f"{t} {k}\n" for k in range(4) for t in TEXTS), encoding="utf-8")
    argv = ["score", "--model", str(model_dirs["bert-cased"]), "--file", str(many), "--out", str(files / "t.csv")]
    argv += ["--cache-dir", str(files / "cache"), "--chunk-texts", "4"]
    real, calls = text_scores._compute, []

    def interrupted(lm, variant, layouts, *args):
        calls.append(len(layouts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(lm, variant, layouts, *args)

    monkeypatch.setattr(text_scores, "_compute", interrupted)
    assert main(argv) == 130
    assert "run the same command again to resume" in capsys.readouterr().err
    monkeypatch.setattr(text_scores, "_compute", lambda *a: (calls.append(len(a[2])), real(*a))[1])
    assert main(argv) == 0
    assert calls == [4, 4, 4, 4]  # the first chunk came from the cache
    assert len(_read(files / "t.csv")["text_id"].unique()) == 12


def test_reading_texts_by_line(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("one\r\ntwo  words\r\n", encoding="utf-8")
    found = read_texts(path)
    assert found.texts == ("one", "two  words") and found.lines == (1, 2) and found.column is None
    path.write_text("one\n   \n", encoding="utf-8")
    with pytest.raises(DatasetError, match="line 2 is empty"):
        read_texts(path)
    csv_path = tmp_path / "t.csv"
    csv_path.write_text('text\n"a, quoted\nline"\nb\n', encoding="utf-8")
    found = read_texts(csv_path)
    assert found.texts == ("a, quoted\nline", "b") and found.lines == (3, 4)
