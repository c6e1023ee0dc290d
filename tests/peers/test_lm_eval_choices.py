"""BBQ and Winogender against lm-evaluation-harness 0.4.13 itself, run in the peer environment (tests/peers/run_lm_eval_choices.py).

lm-eval's task code runs unchanged (its YAML files included, its `utils.py`), fed local rows of ../shared/data/bbq and
../shared/data/winogender (the HF datasets cannot be downloaded here), on the same tiny saved models biaslens loads:

* the biased answers of every shared BBQ item equal lm-eval's `process_docs`;
* on random log-likelihoods (every answer possible), every statistic of lm-eval's `bbq` task (acc, accuracy_amb,
  accuracy_disamb, amb/disamb_bias_score and both per category) equals biaslens's within 1e-6, under the raw answer
  (`lm-eval`) and the acc_norm answer (`lm-eval-norm`);
* end to end (`lm_eval.simple_evaluate`, its HF backend, on a GPT-2 with the real tokenizer and a Llama with <s>):
  every choice's log-likelihood within 1e-4 and every statistic within 1e-6, BBQ under both readings, Winogender's
  seven tasks (all, male, female, neutral, gotcha, gotcha male, gotcha female) under acc and acc_norm.

The HF Winogender rows (sentid, sentence, pronoun, occupation, participant, gender, target, label, gotcha) are made here
from the original files, independently of biaslens's reader: the pronoun is the word that differs from the sentence's
other-gender variant; gotcha follows Rudinger et al. (a gendered pronoun against the occupation's BLS majority when it
refers to the occupation, with it when it refers to the participant).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tests.peers.conftest import run_peer
from tests.support import SHARED

RUNNER = "run_lm_eval_choices.py"  # (CrowS-Pairs runs through run_lm_eval.py)

pytestmark = [pytest.mark.peers, pytest.mark.shared]

BBQ = SHARED / "data" / "bbq"
WINOGENDER = SHARED / "data" / "winogender"
TOL_STAT, TOL_LL = 1e-6, 1e-4


def _rows(per_category: int, step: int = 1) -> list[dict]:
    rows = []
    for path in sorted(BBQ.glob("*.jsonl")):
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        rows += [json.loads(line) for line in lines[::step][:per_category]]
    return rows


def _write(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _equal(ours: dict, theirs: dict, tol: float = TOL_STAT) -> None:
    assert set(theirs) <= set(ours), sorted(set(theirs) - set(ours))
    for name, value in theirs.items():
        mine = ours[name]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            assert mine is None or math.isnan(mine), (name, mine, value)
        else:
            assert mine is not None and abs(mine - value) <= tol, (name, mine, value)


def test_bbq_choices_targets_and_biased_answers_equal_lm_evals(tmp_path, peers_python):
    """On all 11,956 shared items: lm-eval's twelve choices, its right answers and its biased answers are biaslens's."""
    from biaslens.choices.conventions import lm_eval_choices, meaning
    from biaslens.data.multiple_choice import read_bbq

    rows = _rows(10**6)
    path = _write(rows, tmp_path / "rows.jsonl")
    dataset = read_bbq([path])
    theirs = run_peer(peers_python, RUNNER, {"mode": "bbq_docs", "rows": str(path)})
    assert len(dataset) == len(theirs["choices"]) == 11956
    for item, choices, targets, biased in zip(dataset.items, theirs["choices"], theirs["targets"], theirs["biased"]):
        assert list(lm_eval_choices(item) or ()) == choices
        assert [k for k, c in enumerate(choices) if meaning(item, c) == item.label] == [t for t in targets if t < 12]
        assert [k for k, c in enumerate(choices) if c in {item.choices[b] for b in item.biased}] == biased


def _random_scored(dataset, seed: int):
    """Each item's scored choices with a random log-likelihood each (one token; float32 values), lm-eval's order first."""
    from biaslens.choices.conventions import scored_texts
    from biaslens.choices.scoring import ScoredItem
    from biaslens.choices.conventions import prompt_of

    rng = np.random.default_rng(seed)
    out = []
    for item in dataset.items:
        texts = scored_texts(item)
        lls = rng.normal(-8.0, 2.0, size=len(texts)).astype(np.float32).astype(np.float64)
        out.append(
            ScoredItem(
                item, prompt_of(item), texts, tuple((1,) for _ in texts), tuple(np.array([v]) for v in lls), tuple(np.array([1]) for _ in texts)
            )
        )
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bbq_statistics_equal_lm_evals_on_random_log_likelihoods(tmp_path, peers_python, seed):
    """Every statistic of lm-eval's bbq task from lm-eval's own utils.py equals biaslens's (raw and acc_norm answers)."""
    from biaslens.choices.evaluation import read_scored
    from biaslens.data.multiple_choice import read_bbq

    rows = _rows(100)
    path = _write(rows, tmp_path / "rows.jsonl")
    dataset = read_bbq([path])
    scored = _random_scored(dataset, seed)
    run = read_scored(dataset, scored, "lm-eval,lm-eval-norm")
    lls = [s.ll[:12].tolist() for s in scored]
    for rule, convention in (("raw", "lm-eval"), ("norm", "lm-eval-norm")):
        theirs = run_peer(peers_python, RUNNER, {"mode": "bbq_statistics", "rows": str(path), "lls": lls, "rule": rule})
        ours = run.statistics(convention)
        _equal(ours, theirs)
        assert theirs["disamb_bias_score"] not in (None, 0.0) and theirs["amb_bias_score"] not in (None, 0.0)  # not a degenerate draw


def _gpt2(folder: Path) -> Path:
    from biaslens.engine.testing import build_random_causal_model

    return build_random_causal_model("gpt2", SHARED / "tokenizers" / "gpt2", folder, size="tiny")


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_bbq_end_to_end_equals_lm_eval(tmp_path, peers_python, family):
    """lm_eval.simple_evaluate on the same saved model and items: every choice's log-likelihood and every statistic."""
    from biaslens.choices.evaluation import evaluate_choices
    from biaslens.data.multiple_choice import read_bbq
    from biaslens.engine.models import load_model
    from biaslens.engine.testing import build_random_causal_model

    folder = _gpt2(tmp_path / "model") if family == "gpt2" else build_random_causal_model("llama", None, tmp_path / "model")
    rows = _rows(12, step=7)
    path = _write(rows, tmp_path / "bbq_rows.jsonl")
    tasks = [
        {"name": "bbq_local", "include": "bbq/bbq_multiple_choice.yaml", "rows": str(path)},
        {"name": "bbq_local_norm", "include": "bbq/bbq_multiple_choice.yaml", "rows": str(path), "process_results": "norm"},
    ]
    theirs = run_peer(peers_python, RUNNER, {"mode": "evaluate", "model": str(folder), "work": str(tmp_path / "work"), "tasks": tasks})
    run = evaluate_choices(load_model(str(folder)), read_bbq([path]), "lm-eval,lm-eval-norm")
    samples = sorted(theirs["samples"]["bbq_local"], key=lambda s: s["doc_id"])
    assert len(samples) == len(run.scored) == len(rows)
    for sample, scored in zip(samples, run.scored):
        assert len(sample["lls"]) == 12
        assert np.max(np.abs(np.asarray(sample["lls"]) - scored.ll[:12])) <= TOL_LL, scored.item.source_id
    _equal(run.statistics("lm-eval"), theirs["results"]["bbq_local"])
    _equal(run.statistics("lm-eval-norm"), theirs["results"]["bbq_local_norm"])


def winogender_rows() -> tuple[list[dict], list[dict]]:
    """The HF dataset's rows (all, gotcha) made from the original files (module docstring)."""
    with (WINOGENDER / "all_sentences.tsv").open(newline="") as handle:
        sentences = {r["sentid"]: r["sentence"] for r in csv.DictReader(handle, delimiter="\t")}
    with (WINOGENDER / "occupations-stats.tsv").open(newline="") as handle:
        female = {r["occupation"]: float(r["bls_pct_female"]) for r in csv.DictReader(handle, delimiter="\t")}
    rows, gotcha = [], []
    for sentid, sentence in sentences.items():
        occupation, participant, answer, gender, _ = sentid.split(".")
        other = sentences[sentid.replace(f".{gender}.", ".female." if gender == "male" else ".male.")]
        pronoun = next(a for a, b in zip(sentence.rstrip(".").split(), other.rstrip(".").split()) if a != b).lower()
        row = {
            "sentid": sentid,
            "sentence": sentence,
            "pronoun": pronoun,
            "occupation": occupation,
            "participant": participant,
            "gender": gender,
            "target": occupation if answer == "0" else participant,
            "label": int(answer),
        }
        rows.append(row)
        majority = "female" if female[occupation] > 50 else "male"
        if gender != "neutral" and (gender != majority) == (answer == "0"):
            gotcha.append({**row, "gotcha": True})
    return rows, gotcha


def test_winogender_end_to_end_equals_lm_eval(tmp_path, peers_python):
    """lm-eval's seven winogender tasks (acc and acc_norm) on the same model: biaslens's lm-eval and lm-eval-norm readings."""
    from biaslens.choices.evaluation import evaluate_choices
    from biaslens.data.multiple_choice import read_winogender
    from biaslens.engine.models import load_model

    folder = _gpt2(tmp_path / "model")
    rows, gotcha = winogender_rows()
    assert len(rows) == 720 and len(gotcha) == 240
    all_path, gotcha_path = _write(rows, tmp_path / "all.jsonl"), _write(gotcha, tmp_path / "gotcha.jsonl")
    files = {
        "acc": ("winogender.yaml", all_path),
        "acc_male": ("winogender_male.yaml", all_path),
        "acc_female": ("winogender_female.yaml", all_path),
        "acc_neutral": ("winogender_neutral.yaml", all_path),
        "acc_gotcha": ("winogender_gotcha.yaml", gotcha_path),
        "acc_gotcha_male": ("winogender_gotcha_male.yaml", gotcha_path),
        "acc_gotcha_female": ("winogender_gotcha_female.yaml", gotcha_path),
    }
    tasks = [
        {"name": f"wg_{name}", "include": f"winogender/{file}", "rows": str(path), "metrics": ["acc", "acc_norm"]}
        for name, (file, path) in files.items()
    ]
    theirs = run_peer(peers_python, RUNNER, {"mode": "evaluate", "model": str(folder), "work": str(tmp_path / "work"), "tasks": tasks})
    run = evaluate_choices(load_model(str(folder)), read_winogender(WINOGENDER), "all")
    assert sorted(run.dataset.items[k].source_id for k in range(720) if run.dataset.items[k].gotcha) == sorted(r["sentid"] for r in gotcha)
    samples = {s["doc"]["sentid"]: s["lls"] for s in theirs["samples"]["wg_acc"]}
    for scored in run.scored:
        assert np.max(np.abs(np.asarray(samples[scored.item.source_id]) - scored.ll)) <= TOL_LL, scored.item.source_id
    for name in files:
        assert abs(run.statistics("lm-eval")[name] - theirs["results"][f"wg_{name}"]["acc"]) <= TOL_STAT, name
        assert abs(run.statistics("lm-eval-norm")[name] - theirs["results"][f"wg_{name}"]["acc_norm"]) <= TOL_STAT, name
