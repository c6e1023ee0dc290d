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
    assert (tmp_path / "bench-cpu.md").read_text().count("| tiny |") == 2 * len(bench.WORKLOADS)
    assert report["matmul_peak_flops"] > 0 and report["pairs"] == 3
    for block in report["models"]["tiny"]["datasets"].values():
        assert block["pairs"] == 3 and set(block["metrics"]) == set(bench.WORKLOADS)
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
    assert err == "python -m biaslens.bench: error: Unknown size or dataset huge: sizes base, large, tiny; datasets crows-pairs, stereoset."


def test_python_m_biaslens_bench_without_a_checkout_says_so_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(biaslens.bench, "SUITE", tmp_path / "benchmarks" / "bench_engine.py")
    assert biaslens.bench.main(["--sizes", "tiny"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run benchmarks/bench_engine.py from a source checkout" in err
