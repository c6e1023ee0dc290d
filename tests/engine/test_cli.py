"""The CLI contract: files written, one-line errors, exit codes."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from biaslens.cli import main
from tests.support import FIXTURE_DATA, REPO


@pytest.mark.parametrize("dataset", ["crows-pairs", "stereoset"])
def test_evaluate_writes_pairs_and_summary(model_dirs, tmp_path, dataset, capsys):
    out = tmp_path / dataset
    code = main(
        [
            "evaluate",
            "--model",
            str(model_dirs["bert-cased"]),
            "--dataset",
            dataset,
            "--data-dir",
            str(FIXTURE_DATA),
            "--metrics",
            "aul,aula,cps,sss,all_masked",
            "--limit",
            "5",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    frame = pd.read_csv(out / "pairs.csv")
    assert len(frame) == 5 and frame["pair_id"].tolist() == [0, 1, 2, 3, 4]
    assert (frame["dataset"] == dataset).all()
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["metrics"]) == {"aul", "aula", "cps", "sss", "all_masked"}
    assert summary["manifest"]["dataset"]["name"] == dataset
    printed = capsys.readouterr().out
    assert "AULA" in printed and "wrote" in printed


def test_compat_and_sample(model_dirs, tmp_path):
    out = tmp_path / "compat"
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(model_dirs["bert-cased"]),
                "--dataset",
                str(FIXTURE_DATA / "crows-pairs" / "crows_pairs_anonymized.csv"),
                "--metrics",
                "cps",
                "--compat",
                "kaneko2022",
                "--sample",
                "4",
                "--seed",
                "3",
                "--no-cache",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    frame = pd.read_csv(out / "pairs.csv")
    assert len(frame) == 4
    assert all(round(v, 3) == v for v in frame["cps_stereo"])
    assert json.loads((out / "summary.json").read_text())["manifest"]["compat"] == "kaneko2022"


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["evaluate", "--dataset", "crows-pairs", "--out", "x", "--metrics", "foo"], "Unknown metric foo"),
        (["evaluate", "--dataset", "nope.csv", "--out", "x"], "no file nope.csv"),
        (["evaluate", "--dataset", "crows-pairs", "--out", "x", "--limit", "0"], "positive integer"),
        (["evaluate", "--out", "x"], "--dataset"),
        (["evaluate", "--dataset", "crows-pairs", "--out", "x", "--model", "/no/such/folder"], "does not exist"),
    ],
)
def test_bad_input_gives_one_line_and_a_nonzero_exit(argv, fragment, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(FIXTURE_DATA))
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's errors
        code = exit.code
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("Loading", "note:"))]
    assert len(lines) == 1, err
    assert fragment in lines[0]
    assert "Traceback" not in err


def test_the_real_entry_point_gives_one_line_and_exit_2(tmp_path):
    """`python -m biaslens` itself (the tests above call `main` in-process): one line on stderr, exit code 2, no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "biaslens", "frobnicate"],  # refused before any command module (or torch) loads
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("biaslens: error: argument command: invalid choice: 'frobnicate'")


def test_missing_dataset_offline_names_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "empty-cache"))
    code = main(["evaluate", "--dataset", "crows-pairs", "--no-download", "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "crows_pairs_anonymized.csv" in err and "--data-dir" in err


def test_inspect_prints_tokens_and_scores(model_dirs, capsys):
    assert main(["inspect", "--model", str(model_dirs["bert-cased"]), "Women can't drive.", "Men can't drive.", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["key"] for s in out["scores"]] == ["aul", "aula", "cps", "sss", "all_masked"]
    assert out["stereo_tokens"][1]["token"] == "Women"


def test_metrics_and_models_listings(capsys):
    assert main(["metrics"]) == 0
    text = capsys.readouterr().out
    assert "AULA" in text and "Kaneko" in text
    assert main(["models"]) == 0
    assert "bert-base-cased" in capsys.readouterr().out


def test_evaluate_in_bf16_rescore_says_how_many_pairs_it_rescored_and_that_it_is_not_exact(model_dirs, tmp_path, capsys):
    out = tmp_path / "exact"
    argv = ["evaluate", "--model", str(model_dirs["bert-cased"]), "--dataset", "crows-pairs", "--data-dir", str(FIXTURE_DATA)]
    assert main([*argv, "--metrics", "aul,cps", "--limit", "6", "--precision", "bf16-rescore", "--no-cache", "--out", str(out)]) == 0
    block = json.loads((out / "summary.json").read_text())["manifest"]["precision"]
    assert block["mode"] == "bf16-rescore" and block["pairs"] == 6 and set(block["rescored"]) == {"aul", "cps"}
    err = capsys.readouterr().err
    assert f"re-scored in float32 (margin within bfloat16's calibrated error), of 6 pairs: AUL {block['rescored']['aul']}, CPS" in err
    assert "not exact: the other pairs keep bfloat16's verdict" in err and "not exact" in block["promise"]
    assert main([*argv, "--dtype", "bfloat16", "--precision", "bf16-rescore", "--out", str(tmp_path / "no")]) == 2
    assert "load the model in float32 (leave out --dtype bfloat16)" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["metrics"], ["models"], ["--help"], []])
def test_commands_that_need_no_model_load_neither_torch_nor_pandas(argv):
    """`biaslens metrics`, `models` and `--help` answer at once: only the command that runs imports its module."""
    script = (
        "import sys\nfrom biaslens.cli import main\n"
        f"try:\n    code = main({argv!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'pandas', 'scipy', 'altair') if m in sys.modules)\n"
        "print('HEAVY', heavy, 'CODE', code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines()[-1] == f"HEAVY [] CODE {2 if not argv else 0}", proc.stdout + proc.stderr
    if argv == ["--help"]:
        for name in ("evaluate", "compare", "inspect", "metrics", "models", "datasets", "lab", "kurita", "report", "shuffle"):
            assert f"    {name} " in proc.stdout


def test_the_quick_parser_lists_what_the_full_one_lists(capsys):
    """Every command's one-line help comes from `COMMANDS`, whether its options were added or not."""
    from biaslens.cli import build_parser

    assert build_parser([]).format_help() == build_parser().format_help()
    args = build_parser(["metrics"]).parse_args(["metrics"])
    assert args.command == "metrics" and args.func.__name__ == "cmd_metrics"


@pytest.mark.slow  # three processes, one killed mid-run
def test_a_run_killed_with_sigkill_resumes_from_the_cache(model_dirs, tmp_path):
    """kill -9 in the middle of a run: the rerun reuses finished chunks and writes the same files."""
    import os
    import signal
    import sqlite3
    import time

    env = {**os.environ, "PYTHONPATH": str(REPO), "BIASLENS_CACHE_DIR": str(tmp_path / "cache")}
    dataset = tmp_path / "pairs.csv"  # several chunks of pairs, so the run is still going after the first is cached
    rows = [f"Person {i} said the women were bad at maths.,Person {i} said the men were bad at maths." for i in range(400)]
    dataset.write_text("sent_more,sent_less\n" + "\n".join(rows) + "\n", encoding="utf-8")
    argv = [
        sys.executable,
        "-m",
        "biaslens",
        "evaluate",
        "--model",
        str(model_dirs["bert-cased"]),
        "--dataset",
        str(dataset),
        "--metrics",
        "aul,cps",
        "--limit",
        "300",
    ]
    proc = subprocess.Popen([*argv, "--out", str(tmp_path / "killed")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    database = tmp_path / "cache" / "results.sqlite"
    deadline = time.monotonic() + 300
    finished = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(database) as db:
                finished = db.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        except sqlite3.Error:
            finished = 0
        if finished:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "killed" / "pairs.csv").exists()

    resumed = subprocess.run([*argv, "--out", str(tmp_path / "resumed")], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "came from the result cache" in resumed.stderr
    fresh = subprocess.run([*argv, "--no-cache", "--out", str(tmp_path / "fresh")], env=env, capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "resumed" / "pairs.csv"), pd.read_csv(tmp_path / "fresh" / "pairs.csv"))


def test_shuffle_prints_the_sentence_shuffled(model_dirs, capsys):
    assert main(["shuffle", "--model", str(model_dirs["bert-cased"]), "The nurse said she was tired.", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seed"] == 2 and 0 <= out["accuracy"] <= 100 and 0 <= out["shuffled_accuracy"] <= 100
    assert [t["token"] for t in out["tokens"]] == ["[CLS]", "The", "nurse", "said", "she", "was", "tired", ".", "[SEP]"]
    assert sorted(t["new_position"] for t in out["tokens"]) == list(range(9))  # a permutation, special tokens in place
    assert out["tokens"][0]["new_position"] == 0 and out["tokens"][-1]["new_position"] == 8
    assert out["shuffled"] != "The nurse said she was tired." and sorted(out["shuffled"].replace(".", "").split()) == sorted(
        "The nurse said she was tired".split()
    )
