"""Runs lm-evaluation-harness's own tasks in the peer environment (.venv-peers, built by scripts/peers.sh), never in
biaslens's, on rows given here instead of the task's download.

Reads a JSON request on stdin: {"model": folder, "batch_size": 1, "tasks": [{"id", "yaml": a task file under
lm_eval/tasks/ (e.g. "crows_pairs/crows_pairs_english.yaml"), "rows": [...]}]} and writes {id: {"results": the task's
aggregated metrics, "samples": [{"doc_id", "doc", "resps", "metrics"}]}} as JSON on stdout.

Each task is lm-eval's own: its YAML read by lm-eval's loader (its `!function`s: `doc_to_choice`, `process_results`,
`process_docs` filters, from its own utils.py), run by `lm_eval.evaluator.simple_evaluate` with `HFLM` on the model
folder. One thing is changed, where the documents come from: `dataset_path` "json" with the given rows as the task's
test split (the datasets cannot be downloaded here), through the `datasets` library as any task reads its data. The
datasets cache is a temporary folder, so nothing is left behind.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
_CACHE = tempfile.TemporaryDirectory(prefix="lm-eval-datasets-")
os.environ["HF_DATASETS_CACHE"] = _CACHE.name

import lm_eval  # noqa: E402
from lm_eval import evaluator  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402
from lm_eval.tasks._yaml_loader import load_yaml  # noqa: E402  # lm-eval's own loader: it resolves the !function tags

TASKS = Path(lm_eval.__file__).parent / "tasks"


def task_config(yaml: str, rows: list[dict], folder: Path) -> dict:
    """lm-eval's task config from its YAML, reading `rows` as its test split instead of the hub dataset."""
    config = load_yaml(TASKS / yaml)
    data = folder / f"{config['task']}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    split = config.get("test_split") or "test"
    config.pop("tag", None)  # a group tag would pull in the task's siblings
    config.update(dataset_path="json", dataset_name=None, dataset_kwargs={"data_files": {split: str(data)}}, test_split=split)
    return config


def plain(value):
    """Tuples and numbers as JSON."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def main() -> None:
    request = json.load(sys.stdin)
    lm = HFLM(pretrained=request["model"], device="cpu", batch_size=request.get("batch_size", 1))
    out = {}
    with tempfile.TemporaryDirectory(prefix="lm-eval-rows-") as folder:
        for task in request["tasks"]:
            config = task_config(task["yaml"], task["rows"], Path(folder))
            found = evaluator.simple_evaluate(model=lm, tasks=[config], log_samples=True, bootstrap_iters=0)
            name = config["task"]
            samples = [
                {"doc_id": s["doc_id"], "doc": s["doc"], "resps": plain(s["resps"]), "metrics": {m: plain(s[m]) for m in s.get("metrics", [])}}
                for s in found["samples"][name]
            ]
            out[task["id"]] = {"results": plain(found["results"][name]), "samples": samples}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
