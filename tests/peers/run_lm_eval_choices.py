"""Runs lm-evaluation-harness 0.4.13 in the peer environment (.venv-peers, built by scripts/peers.sh), never in biaslens's own.

BBQ's and Winogender's runner (tests/peers/test_lm_eval_choices.py); CrowS-Pairs has its own (run_lm_eval.py, numbers branch).

Reads a JSON request on stdin, writes a JSON answer on stdout. Three kinds of call:

* `{"mode": "evaluate", "model": folder, "batch_size": n, "work": folder, "tasks": [{"name", "include", "rows", ...}]}`:
  `lm_eval.simple_evaluate` with its HF backend on the saved model, for tasks written here as YAML files that
  `include` lm-eval's own task file (`include`, relative to lm_eval/tasks) and read `rows` (a JSON-lines file of the
  dataset's rows) through the `json` builder: the task's own prompt, choices, `process_docs`, `process_results` and
  aggregations run unchanged. Optional: `metrics` (a metric list replacing the task's, e.g. acc and acc_norm) and
  `process_results: "norm"` (lm-eval's `utils._process_results` fed the answer `argmax(ll / len(choice))`, its
  `acc_norm` rule). Answers {"results": {task: {metric: value}}, "samples": {task: [{"doc_id", "lls", "doc"}]}}.
* `{"mode": "bbq_statistics", "rows": path, "lls": [[ll per choice] per row], "rule": "raw" | "norm"}`: lm-eval's
  `bbq` utils on those log-likelihoods (process_docs, process_results_multiple_choice or the acc_norm answer, and every
  aggregation of bbq_multiple_choice.yaml), without a model. Answers {metric: value}.
* `{"mode": "bbq_docs", "rows": path}`: per row, lm-eval's choices, targets and biased answers (indices into its choices).

The HF datasets (oskarvanderwal/bbq, oskarvanderwal/winogender) cannot be downloaded here: the rows come from local files.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import lm_eval

TASKS = Path(lm_eval.__file__).parent / "tasks"
NORM_RESULTS = '''
import importlib.util
from pathlib import Path
import numpy as np
spec = importlib.util.spec_from_file_location("bbq_utils", Path({utils!r}))
utils = importlib.util.module_from_spec(spec)
spec.loader.exec_module(utils)


def process_results_norm(doc, results):
    """lm-eval's bbq process_results with acc_norm's answer: argmax of the log-likelihood per character."""
    lls, _ = zip(*results)
    lengths = np.array([float(len(c)) for c in utils.doc_to_choice(doc)])
    return utils._process_results(doc, np.argmax(np.array(lls) / lengths))
'''


def _plain(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return _plain(value.item())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _task_yaml(task: dict, work: Path) -> Path:
    lines = [
        f"include: {TASKS / task['include']}",
        f"task: {task['name']}",
        "dataset_path: json",
        "dataset_name: null",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {task['rows']}",
        "test_split: test",
    ]
    if task.get("process_results") == "norm":
        (work / "norm_results.py").write_text(NORM_RESULTS.format(utils=str(TASKS / "bbq" / "utils.py")))
        lines.append("process_results: !function norm_results.process_results_norm")
    if task.get("metrics"):
        lines.append("metric_list:")
        for metric in task["metrics"]:
            lines += [f"  - metric: {metric}", "    aggregation: mean", "    higher_is_better: true"]
    if task.get("process_docs"):
        lines.append(f"process_docs: !function {TASKS / task['process_docs']}")
    path = work / f"{task['name']}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def evaluate(request: dict) -> dict:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    work = Path(request["work"])
    work.mkdir(parents=True, exist_ok=True)
    for task in request["tasks"]:
        _task_yaml(task, work)
    manager = TaskManager(include_path=str(work))
    out = simple_evaluate(
        model="hf",
        model_args={"pretrained": request["model"], "dtype": "float32"},
        tasks=[t["name"] for t in request["tasks"]],
        batch_size=request.get("batch_size", 8),
        device="cpu",
        task_manager=manager,
        log_samples=True,
        bootstrap_iters=0,
    )
    assert out is not None
    results = {
        task: {k.split(",")[0]: _plain(v) for k, v in metrics.items() if "," in k and "stderr" not in k} for task, metrics in out["results"].items()
    }
    samples = {
        task: [{"doc_id": s["doc_id"], "lls": [float(r[0]) for r in s["filtered_resps"]], "doc": _plain(s["doc"])} for s in found]
        for task, found in out["samples"].items()
    }
    return {"results": results, "samples": samples}


def _bbq_docs(request: dict):
    """lm-eval's bbq utils module and the request's rows through its process_docs."""
    import datasets

    spec = importlib.util.spec_from_file_location("bbq_utils", TASKS / "bbq" / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(utils)
    rows = [json.loads(line) for line in Path(request["rows"]).read_text().splitlines() if line.strip()]
    return utils, list(utils.process_docs(datasets.Dataset.from_list(rows)))


def bbq_docs(request: dict) -> dict:
    """Per row: lm-eval's choices (doc_to_choice), targets (doc_to_targets) and biased answers (doc_to_biased_answer)."""
    utils, docs = _bbq_docs(request)
    return {
        "choices": [utils.doc_to_choice(d) for d in docs],
        "targets": [utils.doc_to_targets(d) for d in docs],
        "biased": [utils.doc_to_biased_answer(d) for d in docs],
    }


def bbq_statistics(request: dict) -> dict:
    import numpy as np
    import yaml
    from lm_eval.api.registry import get_aggregation

    utils, docs = _bbq_docs(request)
    per_metric: dict[str, list] = {}
    for doc, lls in zip(docs, request["lls"]):
        if request["rule"] == "norm":
            lengths = np.array([float(len(c)) for c in utils.doc_to_choice(doc)])
            found = utils._process_results(doc, np.argmax(np.array(lls) / lengths))
        else:
            found = utils.process_results_multiple_choice(doc, [(ll, False) for ll in lls])
        for name, value in found.items():
            per_metric.setdefault(name, []).append(value)
    # the aggregations bbq_multiple_choice.yaml names, read from the file itself
    text = (TASKS / "bbq" / "bbq_multiple_choice.yaml").read_text().replace("!function ", "")
    config = yaml.safe_load(text)
    answer = {}
    for entry in config["metric_list"]:
        name, aggregation = entry["metric"], entry["aggregation"]
        function = get_aggregation(aggregation) if aggregation == "mean" else getattr(utils, aggregation.split(".")[-1])
        answer[name] = _plain(function(per_metric[name]))
    return answer


def main() -> None:
    request = json.load(sys.stdin)
    mode = request.get("mode", "evaluate")
    json.dump({"evaluate": evaluate, "bbq_statistics": bbq_statistics, "bbq_docs": bbq_docs}[mode](request), sys.stdout)


if __name__ == "__main__":
    main()
