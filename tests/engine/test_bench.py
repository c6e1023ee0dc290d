"""The benchmark suite (benchmarks/bench_engine.py, also `python -m biaslens.bench`): its arithmetic and one tiny run."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import biaslens.bench
from benchmarks import bench_engine as bench

from tests.support import SHARED, shared


def test_forward_flops_by_hand():
    config = SimpleNamespace(hidden_size=2, intermediate_size=4, num_hidden_layers=1, vocab_size=10)
    # body: 3 tokens x (4*2*2 + 2*2*4) + 2 * 3^2 * 2 = 96 + 36; head: 1 row x (2*2 + 2*10) = 24
    assert bench.forward_flops(config, length=3, read_rows=1) == 2 * (96 + 36 + 24)
    assert bench.workload_flops(config, [(3, 1)], full_logits=True) == 2 * (96 + 36 + 3 * 24)


def test_compare_counts_differing_verdicts_and_ignores_shared_nans():
    nan = float("nan")
    got = [(-1.0, -2.0), (-3.0, -2.9), (nan, -1.0)]
    ref = [(-1.0, -2.5), (-3.0, -3.1), (nan, -1.0)]
    out = bench.compare(got, ref)
    assert out["max_abs_diff"] == pytest.approx(0.5)
    assert out["verdicts_differ"] == 1 and out["verdicts_differ_pairs"] == [1]


@pytest.mark.slow
@shared
def test_a_tiny_run_writes_json_and_markdown_with_exact_scores(tmp_path):
    args = ["--sizes", "tiny", "--pairs", "3", "--peak-seconds", "0.1", "--device", "cpu", "--out", str(tmp_path)]
    args += ["--data-dir", str(SHARED / "data"), "--tokenizers", str(SHARED / "tokenizers")]
    assert bench.main(args) == 0
    report = json.loads((tmp_path / "bench-cpu.json").read_text())
    assert (tmp_path / "bench-cpu.md").read_text().count("| tiny |") == 2 * len(bench.WORKLOADS) + 2  # + the CPU-side overhead per dataset
    assert report["matmul_peak_flops"] > 0 and report["pairs"] == 3
    for block in report["models"]["tiny"]["datasets"].values():
        assert block["pairs"] == 3 and set(block["metrics"]) == set(bench.WORKLOADS)
        assert block["cpu_overhead"]["pairs"] == 3 and 0 < block["cpu_overhead"]["model_s"] < block["cpu_overhead"]["wall_s"]
        for entry in block["metrics"].values():
            assert entry["engine_s"] > 0 and 0 < entry["mfu"] and entry["speedup_vs_one_per_pass"] > 0
            for metric, comparison in entry["vs_float32_one_at_a_time"].items():
                assert comparison["max_abs_diff"] < 1e-5, metric  # batched == one at a time
                assert comparison["verdicts_differ"] == 0
        cps = block["metrics"]["cps"]
        assert cps["masked_rows"] > 0 and cps["one_batch_per_sentence_s"] > 0
        assert cps["baseline_model_flops"] > cps["model_flops"]  # the baselines project every position


def test_the_package_has_no_default_data_path():
    """The suite's ../shared defaults live under benchmarks/; the package entry point only finds the suite."""
    parser = bench.build_parser()
    assert parser.get_default("data_dir").endswith("data") and parser.get_default("tokenizers").endswith("tokenizers")
    assert "shared" not in open(biaslens.bench.__file__).read()


def test_python_m_biaslens_bench_runs_the_checkouts_suite(capsys):
    assert biaslens.bench.SUITE == Path(bench.__file__).resolve()
    assert biaslens.bench.main(["--sizes", "huge", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "python -m biaslens.bench: error: Unknown size, dataset or measure huge: sizes base, large, tiny; "
        "datasets crows-pairs, stereoset; measures engine, overhead."
    )


def test_python_m_biaslens_bench_without_a_checkout_says_so_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(biaslens.bench, "SUITE", tmp_path / "benchmarks" / "bench_engine.py")
    assert biaslens.bench.main(["--sizes", "tiny"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run benchmarks/bench_engine.py from a source checkout" in err


def test_cpu_overhead_is_evaluate_less_the_models_own_work(tiny_bert):
    import biaslens.engine.scoring

    from biaslens.data.datasets import Pair

    pairs = [
        Pair(i, "test", "gender", "stereo", f"The {w} was tired.", f"The {v} was tired.")
        for i, (w, v) in enumerate([("nurse", "doctor"), ("mother", "chef")])
    ]
    readout = biaslens.engine.scoring._readout
    out = bench.cpu_overhead(tiny_bert, pairs, ["aul", "cps"])
    assert 0 < out["model_s"] < out["wall_s"] and out["non_model_s"] == pytest.approx(out["wall_s"] - out["model_s"])
    assert out["non_model_s_per_1000_pairs"] == pytest.approx(1000 * out["non_model_s"] / 2) and out["pairs"] == 2
    assert biaslens.engine.scoring._readout is readout and "hidden_states" not in vars(tiny_bert) and "logits" not in vars(tiny_bert)  # put back


def test_the_gpu_check_skips_what_its_time_budget_cannot_hold_and_reads_its_goals():
    from benchmarks import gpu_check

    now = [0.0]
    budget = gpu_check.Budget(10.0, clock=lambda: now[0])
    assert budget.allows("a", 6.0)
    now[0] = 5.0
    assert not budget.allows("b", 6.0) and budget.skipped == ["b (expected 6 s, 5 s left)"]
    errors: list[str] = []
    assert gpu_check.attempt(errors, "c", lambda: 1 / 0) is None and errors == ["c: ZeroDivisionError: division by zero"]
    differ = {"bf16-rescore": {m: 0 for m in PAPER}, "bfloat16": {m: 3 for m in PAPER}}
    model = {
        "model": "bert",
        "end_to_end": {
            "datasets": {
                "crows-pairs": {
                    "pairs": 10,
                    "seconds": {"bfloat16": 1.0, "bf16-rescore": 1.2},
                    "verdicts_differ": differ,
                    "rescored": {m: 2 for m in PAPER},
                }
            },
            "totals": {"bfloat16": 1.5, "bf16-rescore": 2.1},
        },
        "engine": {"all five": {"seconds": 1.0, "mfu": 0.3}, "masked": {"seconds": 0.5, "mfu": 0.45}},
        "busy": {"busy": 0.7, "kernel_s": 0.7, "wall_s_under_profiler": 1.0, "kernels_table": "k.txt"},
        "oom": {"pairs": 5, "budget_tokens": 4096, "free_mb_left": 1024, "halvings": 3, "verdicts_differ": {"cps": 0}, "max_abs_diff": 1e-3},
    }
    report = {"models": {"base": model}, "machine": {"device": "cuda", "gpu": "H100", "torch": "2"}, "created": "now", "peak_dtype": "bfloat16"}
    report |= {"peak_flops": 8e14, "pairs": "all", "repeat": 2, "skipped": budget.skipped}
    goals = gpu_check.goals(report)
    assert goals["base: all five, both datasets, bfloat16 <= 2 s"] == {"value": 1.5, "met": True}
    assert goals["base: bf16-rescore <= 1.3x bfloat16"] == {"value": 1.4, "met": False}
    assert not [k for k in goals if "verdicts =" in k]  # bf16-rescore's verdicts that differ are counted, not a goal: it is not exact
    assert goals["base: GPU busy >= 80%"]["met"] is False and goals["base: masked metrics MFU >= 40%"]["met"] is True
    assert goals["base: out of memory halves the batches, same verdicts"] == {"value": 3, "met": True}
    text = gpu_check.markdown(report | {"goals": goals})
    assert "| **total** | | **1.50** | **2.10** |" in text and "GPU busy: 70%" in text and "Skipped for time: b (expected 6 s" in text


PAPER = ("aul", "aula", "cps", "sss", "all_masked")


@pytest.mark.slow
@shared
def test_the_gpu_check_runs_on_the_cpu_in_its_smoke_mode(tmp_path):
    from benchmarks import gpu_check

    args = ["--smoke", "--out", str(tmp_path), "--data-dir", str(SHARED / "data"), "--tokenizers", str(SHARED / "tokenizers")]
    assert gpu_check.main(args) == 0
    report = json.loads((tmp_path / "gpu-check-cpu.json").read_text())
    tiny = report["models"]["tiny"]
    assert not tiny["errors"] and not report["skipped"]
    e2e = tiny["end_to_end"]
    assert set(e2e["totals"]) == {"bfloat16", "bfloat16-padded", "float32", "bf16-rescore", "bfloat16, one chunk"}
    for block in e2e["datasets"].values():
        differ = block["verdicts_differ"]["bf16-rescore"]  # float32's verdict on the re-scored pairs: only the others may differ
        assert block["pairs"] == 6 and all(differ[m] <= block["pairs"] - block["rescored"][m] for m in PAPER)
        assert set(block["rescored"]) == set(PAPER)
    assert tiny["engine"]["masked"]["mfu"] > 0 and tiny["cpu_overhead"]["non_model_s"] > 0
    assert "## tiny" in (tmp_path / "gpu-check-cpu.md").read_text()
    causal = report["causal"]["gpt2-tiny"]  # the causal part: every convention, and lm-eval's numbers where it is installed
    assert set(causal["conventions"]) == {"default", "lm-eval", "bias-bench", "oba2024"} and causal["biaslens"]["seconds"] > 0
    assert causal["packing"]["pack"] is False and all("lm-eval is not installed" in e for e in causal["errors"])
