"""Past one process: `accelerate launch -m biaslens evaluate` and `device_map="auto"`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from biaslens.engine.evaluation import inspect_pair
from biaslens.engine.models import load_model
from biaslens.engine.scoring import MaskedQuery, masked_pass, unmasked_pass

from tests.support import FIXTURE_DATA, REPO

CROWS_PAIRS = FIXTURE_DATA / "crows-pairs" / "crows_pairs_anonymized.csv"

#: Manifest entries that differ between any two runs (when, how long, how many processes).
VOLATILE = ("created", "seconds", "processes")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _evaluate(prefix: list[str], model: Path, out: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    args = [
        *prefix,
        "-m",
        "biaslens",
        "evaluate",
        "--model",
        str(model),
        "--dataset",
        str(CROWS_PAIRS),
        "--device",
        "cpu",
        "--limit",
        "10",
        "--chunk-pairs",
        "4",
        "--out",
        str(out),
        *extra,
    ]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
def test_accelerate_launch_with_two_processes_writes_what_one_process_writes(model_dirs, tmp_path):
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),  # no accelerate config of the developer's
        "OMP_NUM_THREADS": "1",  # the same thread count in both runs
        "PYTHONPATH": str(REPO),
    }
    model = model_dirs["bert-cased"]
    single = _evaluate([sys.executable], model, tmp_path / "one", env, "--no-cache")
    assert single.returncode == 0, single.stderr
    # --multi_gpu is accelerate's multi-process launcher (torchrun); with --device cpu the
    # processes talk over gloo. (`--cpu` alone starts one process unless MPI is set up.)
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1"]
    launch += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port())]
    parallel = _evaluate(launch, model, tmp_path / "two", env, "--cache-dir", str(tmp_path / "cache"))
    assert parallel.returncode == 0, parallel.stderr

    # Ten pairs in chunks of four: process 0 scores pairs 0-7, process 1 pairs 8-9.
    assert (tmp_path / "two" / "pairs.csv").read_bytes() == (tmp_path / "one" / "pairs.csv").read_bytes()
    one = json.loads((tmp_path / "one" / "summary.json").read_text())
    two = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert two["manifest"]["processes"] == 2 and "processes" not in one["manifest"]
    for summary in (one, two):
        for key in VOLATILE:
            summary["manifest"].pop(key, None)
        summary["manifest"]["versions"].pop("platform", None)
    assert two == one
    assert parallel.stdout.count("wrote ") == 1  # only the main process writes and reports


SENTENCES = ("The nurse said she was tired.", "The engineer said he was tired.")


def test_device_map_auto_loads_and_scores_identically(model_dirs):
    plain = load_model(str(model_dirs["roberta"]), device="cpu")
    mapped = load_model(str(model_dirs["roberta"]), device_map="auto")
    assert mapped.device.type == "cpu" and mapped.project is not None
    a, b = (inspect_pair(lm, *SENTENCES) for lm in (plain, mapped))
    np.testing.assert_array_equal(a.summary_frame()[["stereo", "anti"]].to_numpy(), b.summary_frame()[["stereo", "anti"]].to_numpy())


def test_cli_device_map_auto_gives_the_same_scores(model_dirs, capsys):
    from biaslens.cli import main

    outputs = []
    for extra in ([], ["--device-map", "auto"]):
        assert main(["inspect", *SENTENCES, "--model", str(model_dirs["bert-cased"]), "--metrics", "aul,cps", "--json", *extra]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[1]["scores"] == outputs[0]["scores"]


def test_a_model_dispatched_over_devices_scores_identically(model_dirs, tmp_path):
    """accelerate's hooks (here: the encoder offloaded to disk) change no score.

    On a machine without GPUs this is the closest to a model spread over several devices:
    the same hooks move weights and activations between devices.
    """
    from accelerate import dispatch_model

    plain = load_model(str(model_dirs["bert-cased"]), device="cpu")
    split = load_model(str(model_dirs["bert-cased"]), device="cpu")
    device_map = {"bert.embeddings": "cpu", "bert.encoder": "disk", "cls": "cpu"}
    dispatch_model(split.model, device_map=device_map, main_device="cpu", offload_dir=str(tmp_path / "offload"))
    encs = [plain.encode(s) for s in SENTENCES]
    for x, y in zip(unmasked_pass(plain, encs), unmasked_pass(split, encs)):
        np.testing.assert_allclose(x.logprob, y.logprob, atol=1e-6)
        np.testing.assert_allclose(x.attention, y.attention, atol=1e-6)
    query = MaskedQuery(encs[0].ids, (2, 3), (2, 3))
    np.testing.assert_allclose(masked_pass(plain, [query])[0].logprob, masked_pass(split, [query])[0].logprob, atol=1e-6)
    assert split.manifest()["device_map"] == {"cpu": "bert.embeddings", "disk": "bert.encoder"}


def test_unknown_device_map_is_refused(model_dirs):
    from biaslens.errors import InputError

    with pytest.raises(InputError, match="device map"):
        load_model(str(model_dirs["bert-cased"]), device_map="everywhere")
