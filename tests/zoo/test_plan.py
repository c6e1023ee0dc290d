"""The zoo plan: what it holds once read, and every mistake refused in one line before anything runs."""

from __future__ import annotations

import pytest

from biaslens.zoo import plan as zoo_plan
from biaslens.zoo.plan import PlanError, load_plan, parse_plan, parse_time
from biaslens.choices.conventions import HEADLINE_STATISTICS
from biaslens.data.multiple_choice import read_choice_path
from biaslens.zoo.cells import load_datasets
from tests.support import FIXTURE_DATA


def _plan(tmp_path, text: str):
    path = tmp_path / "plan.toml"
    path.write_text(text, encoding="utf-8")
    return load_plan(path)


def test_a_plan_with_defaults_and_overrides(tmp_path, model_dirs):
    bert, roberta = model_dirs["bert-cased"], model_dirs["roberta"]
    plan = _plan(
        tmp_path,
        f"""
store = "out/store"
datasets = ["crows_pairs", {{ name = "stereoset", limit = 5 }}]
metrics = ["cps", "aul"]
precision = ["float32", "bf16-rescore"]
retries = 4

[[models]]
id = "{bert}"

[[models]]
id = "{roberta}"
label = "RoBERTa tiny"
metrics = "aula"
compat = ["default", "kaneko2022"]
datasets = ["crows-pairs"]

[[models]]
id = "bert-base-cased"
revision = "cd5ef92a9fb2f889e972770a36d4ed042daf221e"
family = "bert"
kind = "masked"

[slurm]
partition = "gpu"
time = "2:00:00"
max_parallel = 8
additional = {{ account = "lab" }}
""",
    )
    assert plan.store == (tmp_path / "out" / "store").resolve() and plan.retries == 4 and plan.path == (tmp_path / "plan.toml").resolve()
    assert [d.label for d in plan.datasets] == ["crows-pairs", "stereoset"] and plan.datasets[1].selection == {"limit": 5, "seed": 0}
    first, second, third = plan.models
    assert first.local and first.label == "bert-cased" and first.metrics == ("aul", "cps")  # registry order
    assert first.precisions == ("float32", "bf16-rescore") and first.load_dtypes() == ["float32"]  # bf16-rescore scores a float32 model
    assert len(first.units()) == 2 * 2 and first.pinned
    assert second.label == "RoBERTa tiny" and second.metrics == ("aula",) and [d.label for d in second.datasets] == ["crows-pairs"]
    assert [u.compat for u in second.units()] == ["default", "kaneko2022"] * 2
    assert not third.local and third.pinned and third.family == "bert" and third.label == "bert-base-cased@cd5ef92a9f"
    assert (
        plan.slurm.partition == "gpu" and plan.slurm.time_min == 120 and plan.slurm.max_parallel == 8 and plan.slurm.additional == {"account": "lab"}
    )
    assert plan.slurm.gpus_per_job is None and plan.local.max_parallel == 1  # GPUs follow each model's device
    assert plan.sha256 and len(plan.sha256) == 64


def test_a_hub_id_without_a_full_commit_is_not_pinned(tmp_path):
    plan = _plan(tmp_path, 'datasets = ["crows-pairs"]\n[[models]]\nid = "roberta-base"\nrevision = "main"\n[[models]]\nid = "org/model"\n')
    assert [m.pinned for m in plan.models] == [False, False]
    assert plan.models[0].resolution_key("float32") != plan.models[0].resolution_key("bfloat16")


BAD = [
    ("datasets = [\n", "not valid TOML"),
    ('[[models]]\nid = "x"\n', "datasets: no datasets"),
    ('datasets = ["crows-pairs"]\n', "models: no models"),
    ('datasets = ["crows-pairs"]\nmetric = "aul"\n[[models]]\nid = "x"\n', "unknown key 'metric' in the top level"),
    ('datasets = ["nope"]\n[[models]]\nid = "x"\n', "datasets[0].name: no dataset named 'nope'"),
    ('datasets = ["crows-pairs", "cp"]\n[[models]]\nid = "x"\n', "'crows-pairs' is named twice"),
    ('datasets = [{ name = "cp", limit = 0 }]\n[[models]]\nid = "x"\n', "datasets[0].limit: must be a whole number of at least 1, not 0"),
    ('datasets = ["cp"]\nmetrics = ["aul", "xyz"]\n[[models]]\nid = "x"\n', "metrics: "),
    ('datasets = ["cp"]\nprecision = "float8"\n[[models]]\nid = "x"\n', "precision: unknown 'float8'"),
    ('datasets = ["cp"]\ncompat = ["paper"]\n[[models]]\nid = "x"\n', "compat: unknown 'paper'"),
    ('datasets = ["cp"]\nconventions = ["lm"]\n[[models]]\nid = "x"\n', "conventions: unknown 'lm'; choose from default, lm-eval"),
    ('datasets = ["cp"]\nprecision = "exact-bf16"\n[[models]]\nid = "x"\n', "precision: exact-bf16 was renamed bf16-rescore: it is not exact"),
    ('datasets = ["cp"]\n[[models]]\nlabel = "x"\n', "models[0]: has no id"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\nkind = "seq2seq"\n', "models[0].kind: unknown 'seq2seq'"),
    ('datasets = ["cp"]\n[[models]]\nid = "./no/such/folder"\n', "models[0].id: no model folder"),
    ('datasets = ["cp"]\n[[models]]\nid = "a b"\n', "models[0].id: 'a b' is not a hub id"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\n[[models]]\nid = "x"\n', "models[1]: the same model as models[0]"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\nlabel = "a"\n[[models]]\nid = "y"\nlabel = "a"\n', "models[1].label: 'a' is also models[0]'s label"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\nchunk_pairs = true\n', "models[0].chunk_pairs: must be a whole number"),
    ('datasets = ["cp"]\nretries = -1\n[[models]]\nid = "x"\n', "retries: must be a whole number of at least 0"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\nmetrics = []\n', "models[0].metrics: must be text or a non-empty list"),
    ('datasets = ["cp"]\n[slurm]\ntime = "soon"\n[[models]]\nid = "x"\n', "slurm.time: 'soon' is not a time"),
    ('datasets = ["cp"]\n[slurm]\nnodes = 2\n[[models]]\nid = "x"\n', "unknown key 'nodes' in [slurm]"),
    ('datasets = ["cp"]\nmodels = "x"\n', "models: must be a list of tables"),
    ('datasets = ["cp"]\n[slurm]\ntime = 2\n[[models]]\nid = "x"\n', "slurm.time: 2 minutes is too short for a zoo job: Slurm warns it 30 s"),
    ('datasets = ["cp"]\n[slurm]\ngpus = "a100:1"\ngres = "gpu:1"\n[[models]]\nid = "x"\n', "slurm: gpus and gres both ask for GPUs: give one"),
    ('datasets = ["cp"]\n[slurm]\nsetup = "module load x"\nmodels_per_job = 0\n[[models]]\nid = "x"\n', "slurm.models_per_job: must be a whole"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\nslurm = { max_parallel = 2 }\n', "unknown key 'max_parallel' in models[0].slurm"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\nslurm = { time = 1 }\n', "models[0].slurm.time: 1 minute is too short"),
    ('datasets = ["cp"]\n[[models]]\nid = "x"\nslurm = "big"\n', "models[0].slurm: must be a table"),
]


@pytest.mark.parametrize(("text", "expected"), BAD, ids=[e for _, e in BAD])
def test_a_bad_plan_is_refused_in_one_line(tmp_path, text, expected):
    with pytest.raises(PlanError) as caught:
        _plan(tmp_path, text)
    message = str(caught.value)
    assert expected in message and "\n" not in message
    assert message.startswith(str(tmp_path / "plan.toml"))


def test_a_revision_for_a_local_folder_and_a_folder_without_config(tmp_path, model_dirs):
    with pytest.raises(PlanError, match=r"models\[0\]\.revision: a revision names a commit of a hub model"):
        _plan(tmp_path, f'datasets = ["cp"]\n[[models]]\nid = "{model_dirs["albert"]}"\nrevision = "main"\n')
    (tmp_path / "empty").mkdir()
    with pytest.raises(PlanError, match="has no config.json"):
        _plan(tmp_path, 'datasets = ["cp"]\n[[models]]\nid = "empty"\n')


def test_missing_and_unreadable_plan_files(tmp_path):
    with pytest.raises(PlanError, match="no such plan file"):
        load_plan(tmp_path / "absent.toml")
    with pytest.raises(PlanError, match="is a folder"):
        load_plan(tmp_path)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(PlanError, match="not UTF-8"):
        load_plan(tmp_path / "bin.toml")


@pytest.mark.timeout(60)
def test_a_plan_path_that_is_not_a_regular_file_is_refused_at_once(tmp_path, monkeypatch):
    """A FIFO was waited on forever and /dev/zero read until memory ran out: both are refused before a byte is read, as
    every file read on a user's behalf is (`datafiles.read_bytes`), and so is a plan over the size limit."""
    import os

    from biaslens.data import datafiles

    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a device")):
        with pytest.raises(PlanError) as caught:
            load_plan(path)
        assert str(caught.value) == f"{path}: it is {kind}, not a regular file: name the plan's TOML file."
    big = tmp_path / "big.toml"
    big.write_text('datasets = ["cp"]\n' + "# padding\n" * 200_000)
    monkeypatch.setattr(datafiles, "MAX_FILE_MB", 1)
    with pytest.raises(PlanError, match=r"big.toml: the file is 2.0 MB; biaslens reads data files up to 1 MB"):
        load_plan(big)


def test_a_pairs_file_and_relative_paths_are_taken_from_the_plans_folder(tmp_path, model_dirs):
    pairs = FIXTURE_DATA / "crows-pairs" / "crows_pairs_anonymized.csv"
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mine.csv").write_bytes(pairs.read_bytes())
    plan = parse_plan({"datasets": ["data/mine.csv"], "models": [{"id": str(model_dirs["albert"])}], "data_dir": "data"}, tmp_path)
    assert plan.datasets[0].name == str((tmp_path / "data" / "mine.csv").resolve()) and plan.datasets[0].label == "mine"
    assert plan.data_dir == str((tmp_path / "data").resolve()) and plan.store == (tmp_path / "zoo-store").resolve()


def test_conventions_are_the_engine_s(tmp_path):
    """A plan names the engine's conventions (`biaslens.engine.conventions.CONVENTIONS`), each stored per unit."""
    from biaslens.engine.conventions import CONVENTIONS

    assert zoo_plan.CONVENTIONS == tuple(CONVENTIONS)
    plan = parse_plan({"datasets": ["cp"], "conventions": ["default", "lm-eval"], "models": [{"id": "x"}]}, tmp_path)
    assert [u.convention for u in plan.models[0].units()] == ["default", "lm-eval"]


@pytest.mark.parametrize(
    ("value", "minutes"), [(90, 90), ("90", 90), ("1:30:00", 90), ("2-00:00", 2880), ("1-1", 1500), ("0:30", 1), ("00:10:30", 11)]
)
def test_times(value, minutes):
    assert parse_time(value) == minutes


@pytest.mark.parametrize("value", [0, -5, "soon", "1:2:3:4", "0:0:0", True])
def test_bad_times(value):
    with pytest.raises((ValueError, TypeError)):
        parse_time(value)


def test_a_dataset_label_means_one_dataset_in_the_whole_plan(tmp_path):
    text = 'datasets = ["cp"]\n[[models]]\nid = "x"\ndatasets = [{ name = "cp", limit = 3 }]\n'
    with pytest.raises(PlanError, match=r"models\[0\]\.datasets: 'crows-pairs' names another dataset or selection"):
        _plan(tmp_path, text)
    plan = _plan(tmp_path, 'datasets = ["cp"]\n[[models]]\nid = "x"\ndatasets = [{ name = "cp", limit = 3, label = "cp-3" }]\n')
    assert plan.models[0].datasets[0].label == "cp-3"


def test_per_model_resources_setup_lines_and_packing(tmp_path):
    """[slurm] holds every job's resources; a model's own `slurm` table replaces them for its jobs (a GPU type replacing
    the plan's count, sbatch options added to the plan's); setup lines and models_per_job are read."""
    from biaslens.zoo.executors import ExecutorOptions

    plan = _plan(
        tmp_path,
        """
datasets = ["cp"]
[slurm]
partition = "gpu"
gpus_per_job = 1
mem_gb = 16
time = "1:00:00"
setup = ["module load cuda/12.4", "source ~/envs/bias/bin/activate"]
models_per_job = 4
additional = { account = "lab" }

[[models]]
id = "bert-base-cased"

[[models]]
id = "meta-llama/Llama-2-7b-hf"
[models.slurm]
gpus = "a100:1"
mem_gb = 64
time = "6:00:00"
additional = { constraint = "a100" }

[[models]]
id = "roberta-base"
device = "cpu"
slurm = { partition = "cpu", gpus_per_job = 0 }
""",
    )
    assert plan.slurm.setup == ("module load cuda/12.4", "source ~/envs/bias/bin/activate") and plan.slurm.models_per_job == 4
    options = ExecutorOptions.from_plan(plan, "slurm", time_min=90)  # the command line replaces the plan's; a model's own wins
    small, big, cpu = (options.parameters(m) for m in plan.models)
    assert small["gpus_per_node"] == 1 and small["mem"] == "16384M" and small["time"] == 90 and small["partition"] == "gpu"
    assert small["setup"][:2] == ["module load cuda/12.4", "source ~/envs/bias/bin/activate"] and small["setup"][2].startswith("export PYTHONPATH=")
    assert big["gpus_per_node"] == "a100:1" and big["mem"] == "65536M" and big["time"] == 360
    assert big["additional_parameters"] == {"account": "lab", "constraint": "a100"} and small["additional_parameters"] == {"account": "lab"}
    assert "gpus_per_node" not in cpu and cpu["partition"] == "cpu"
    assert small["signal_delay_s"] == 90 and options.settings(plan.models[1]).gres is None


def test_gpus_follow_the_device_and_short_limits_warn_sooner(tmp_path):
    """Without a GPU key a model whose device may be a GPU asks for one and a CPU model for none; the warning's lead is
    submitit's 90 s or a quarter of a shorter limit; a limit too short to be warned and still score is refused."""
    from biaslens.errors import InputError
    from biaslens.zoo.executors import ExecutorOptions
    from biaslens.zoo.plan import signal_lead_s, slurm_time_problem

    plan = parse_plan({"datasets": ["cp"], "models": [{"id": "x"}, {"id": "y", "device": "cpu"}, {"id": "z", "device": "cuda:1"}]}, tmp_path)
    options = ExecutorOptions.from_plan(plan, "slurm")
    assert [options.parameters(m).get("gpus_per_node") for m in plan.models] == [1, None, 1]
    assert [signal_lead_s(m) for m in (3, 4, 6, 10, 600)] == [45, 60, 90, 90, 90]
    assert slurm_time_problem(3) is None and "give at least 3 minutes" in (slurm_time_problem(2) or "")
    with pytest.raises(InputError, match="--time: 1 minute is too short"):
        ExecutorOptions.from_plan(plan, "slurm", time_min=1)
    assert ExecutorOptions.from_plan(plan, "local", time_min=1).local.time_min == 1  # this machine: no Slurm warning


# -- BBQ and Winogender: multiple-choice datasets beside the pair datasets ---------------------------------


def _choice_plan(**top):
    return parse_plan({"data_dir": str(FIXTURE_DATA), "download": False, "models": [{"id": "gpt2"}], **top})


def test_a_plan_names_choice_datasets_beside_pair_datasets():
    plan = _choice_plan(datasets=["bbq-age", "winogender", "crows-pairs", str(FIXTURE_DATA / "bbq")], choice_conventions=["lm-eval", "original"])
    families = {d.label: d.family for d in plan.datasets}
    assert families == {"bbq-age": "bbq", "winogender": "winogender", "crows-pairs": None, "bbq": "bbq"}
    units = plan.models[0].units()
    described = [(u.dataset.label, u.convention, u.metrics) for u in units if u.dataset.family is not None]
    assert ("bbq-age", "original", HEADLINE_STATISTICS["bbq"]) in described and (
        "winogender",
        "lm-eval",
        HEADLINE_STATISTICS["winogender"],
    ) in described
    assert ("winogender", "original", HEADLINE_STATISTICS["winogender"]) not in described  # original is BBQ's only
    assert plan.notes == ("original does not apply to winogender: scored under lm-eval.",)
    pair = [u for u in units if u.dataset.label == "crows-pairs"]
    assert [u.convention for u in pair] == ["default"] and pair[0].metrics is None  # the pair conventions and metrics, as before


@pytest.mark.parametrize(
    "top, said",
    [
        ({"choice_conventions": ["lm-eval-raw"]}, "choice_conventions: unknown 'lm-eval-raw'; choose from lm-eval, lm-eval-norm, original."),
        ({"conventions": ["original"]}, "conventions: unknown 'original' (a multiple-choice convention: name it in choice_conventions)"),
        ({"choice_conventions": "original", "datasets": ["winogender-gotcha"]}, "none of original applies to winogender-gotcha (winogender)"),
        ({"precision": "bf16-rescore"}, "bf16-rescore re-scores pairs: bbq-age needs float32, bfloat16 or float16"),
    ],
)
def test_a_plan_that_cannot_score_a_choice_dataset_is_one_line(top, said):
    with pytest.raises(PlanError) as caught:
        _choice_plan(**{"datasets": ["bbq-age"], **top})
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_subsets_are_told_apart_and_a_category_file_is_its_name(tmp_path):
    from biaslens.zoo.choicecells import dataset_sha256

    folder = FIXTURE_DATA / "bbq"
    whole, ambig = (load_datasets(_choice_plan(datasets=[n]))[n] for n in ("bbq", "bbq-ambig"))
    assert whole.sha256 == ambig.sha256 and dataset_sha256(whole) != dataset_sha256(ambig)  # the same files, other items
    age = load_datasets(_choice_plan(datasets=["bbq-age"]))["bbq-age"]
    own = tmp_path / "Age.jsonl"
    own.write_bytes(next(folder.glob("Age*.jsonl")).read_bytes())
    assert dataset_sha256(age) == dataset_sha256(read_choice_path(own))  # the category's name and its file: one key
