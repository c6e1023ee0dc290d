"""biaslens's mlm-bias measures against the `mlm-bias` package itself, on one loaded model and the same pairs.

Run it in a throwaway virtual environment that has `mlm-bias` (never in the project's: it pins numpy < 2 and would
pull its own torch). The one this was checked in: the project interpreter's venv with the project's site-packages on
its path, and the package without its dependencies::

    .venv/bin/python -m venv /tmp/mlmvenv
    .venv/bin/python -c "import site; print(site.getsitepackages()[0])" > /tmp/mlmvenv/lib/python3.11/site-packages/project.pth
    /tmp/mlmvenv/bin/pip install --no-deps mlm-bias==0.1.7
    /tmp/mlmvenv/bin/python benchmarks/check_mlm_bias.py --pairs 40

The package builds its model from the config with random weights (`AutoModelForMaskedLM.from_config`), so its
`BiasMLM` is made on the model folder and its `model` then replaced by the one biaslens loaded (the eager twin: the
same weights): the formulas are compared on one loaded model. Both of its paths run (`evaluate(batching=False)` and
the default `batching=True`) against biaslens's `padded=False` and `padded=True`; then `RelativeBiasMLMs` on two
models against `relative_bias`. Last, the package's AUL, AULA, CSPS and SSS against biaslens's AUL, AULA, CPS (default mode)
and SSS (kaneko2022 mode). Prints the largest differences (relative where a value exceeds 1) and exits 1 if any
exceeds `--tolerance` or a bias score differs.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def _largest(a, b) -> float:
    """The largest difference, relative to the value where it exceeds 1 (a sum of 15 log-probabilities in float32
    carries about 1e-5 of rounding)."""
    worst = 0.0
    for x, y in zip(a, b):
        if (math.isnan(x) and math.isnan(y)) or x == y:
            continue
        worst = max(worst, abs(x - y) / max(1.0, abs(y)))
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="the first N CrowS-Pairs pairs")
    parser.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data" / "crows-pairs" / "crows_pairs_anonymized.csv"))
    parser.add_argument("--tokenizer", default=str(HERE.parent.parent / "shared" / "tokenizers" / "bert-base-cased"))
    parser.add_argument("--tolerance", type=float, default=1e-6)
    args = parser.parse_args(argv)

    import mlm_bias  # the package under comparison: only in the throwaway environment
    import torch

    from biaslens.analyses.mlm_bias import MEASURES, mlm_bias_scores, relative_bias
    from biaslens.data.datasets import load_dataset
    from biaslens.engine.models import load_model
    from biaslens.engine.testing import build_random_model

    pairs = list(load_dataset(args.data).pairs[: args.pairs])
    work = Path(tempfile.mkdtemp(prefix="check-mlm-bias-"))
    folders = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        folders.append(build_random_model("bert-cased", args.tokenizer, work / f"model-{seed}", seed=seed))
    dataset = mlm_bias.BiasDataset([p.bias_type for p in pairs], [p.sent_stereo for p in pairs], [p.sent_anti for p in pairs])
    failures = 0
    package_results = {}
    ours = {}
    for seed, folder in enumerate(folders):
        lm = load_model(str(folder))
        for batching in (False, True):
            evaluator = mlm_bias.BiasMLM(str(folder), dataset)
            evaluator.model = lm._eager_model()  # the same weights: the formulas compared on one loaded model
            evaluator.model.config.output_attentions = True  # what the package's own config asks for (AutoConfig(output_attentions=True))
            result = evaluator.evaluate(measures=["crr", "dp"], attention=True, batching=batching)
            mine = mlm_bias_scores(lm, pairs, padded=batching)
            package_results[seed, batching], ours[seed, batching] = result, mine
            for m in MEASURES:
                for side, s in (("stereo", 1), ("anti", 2)):
                    worst = _largest(result.eval(s, m), mine.pairs[f"{m}_{side}"].tolist())
                    flag = "" if worst <= args.tolerance else "  <-- over the tolerance"
                    failures += bool(flag)
                    print(f"model {seed} batching={batching!s:<5} {m:<4} S{s}: largest difference {worst:.3g}{flag}")
                theirs = result["bias_scores"][m]["total"]
                score = mine.scores.set_index("measure").loc[m, "bias_score"]
                same = math.isclose(theirs, score, rel_tol=1e-12)
                failures += not same
                verdict = "" if same else "  <-- differs"
                print(f"model {seed} batching={batching!s:<5} {m:<4} bias score: package {theirs:.4f}, biaslens {score:.4f}{verdict}")
    # The package's other measures against biaslens's metrics: AUL, AULA and CSPS (= CPS) in the default mode, SSS in
    # kaneko2022 mode (its |M| x |M| mean, cross terms included).
    from biaslens.engine.evaluation import evaluate

    lm = load_model(str(folders[0]))
    evaluator = mlm_bias.BiasMLM(str(folders[0]), dataset)
    evaluator.model = lm._eager_model()
    evaluator.model.config.output_attentions = True
    others = evaluator.evaluate(measures=["aul", "csps", "sss"], attention=True, batching=False)
    default = evaluate(lm, pairs, ["aul", "aula", "cps"]).pairs
    compat = evaluate(lm, pairs, ["sss"], compat="kaneko2022").pairs
    for theirs_name, mine_name, frame in (("aul", "aul", default), ("aula", "aula", default), ("csps", "cps", default), ("sss", "sss", compat)):
        for side, s in (("stereo", 1), ("anti", 2)):
            worst = _largest(others.eval(s, theirs_name), frame[f"{mine_name}_{side}"].tolist())
            flag = "" if worst <= args.tolerance else "  <-- over the tolerance"
            failures += bool(flag)
            print(f"package {theirs_name:<5} vs biaslens {mine_name:<4} S{s}: largest difference {worst:.3g}{flag}")
    for batching in (False, True):
        rel = mlm_bias.RelativeBiasMLMs(package_results[0, batching], package_results[1, batching]).evaluate()
        table = relative_bias(ours[0, batching], ours[1, batching], formulas=("published",))
        for m in MEASURES:
            theirs = rel["bias_scores"][m]["total"]
            score = float(table[(table["measure"] == m) & (table["bias_type"] == "")]["relative_bias"].iloc[0])
            same = math.isclose(theirs, score, rel_tol=1e-12)  # 100 * mean(...) against 100 * wins / n
            failures += not same
            print(f"relative bias batching={batching!s:<5} {m:<4}: package {theirs:.4f}, biaslens {score:.4f}{'' if same else '  <-- differs'}")
    print("PASS" if not failures else f"FAIL: {failures} comparisons differ")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
