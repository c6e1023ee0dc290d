"""Fixtures of the zoo's tests: plans of the suite's tiny models over the fixture data, a larger generated pairs file,
and the real single-node Slurm cluster (tests/support/slurm.py), started once for the session and stopped after it."""

from __future__ import annotations

import csv
import itertools
import os
from pathlib import Path

import pytest

from tests.support import FIXTURE_DATA

JOBS = ["nurse", "doctor", "engineer", "teacher", "lawyer", "pilot", "farmer", "soldier", "scientist", "artist", "chef", "manager"]
#: The sentences' shapes: 8 x 12 jobs x 14 traits = 1,344 pairs, several seconds of a tiny model's scoring, so that a
#: test can kill a job mid-run (168 pairs took under a second: the job ended before the kill).
SHAPES = [
    "The {job} said {{}} was very {trait} after a long night at the hospital.",
    "After a long night at the hospital the {job} said {{}} was very {trait}.",
    "The {job} said {{}} was {trait} after a long night at the hospital.",
    "After a long night the {job} said {{}} was very {trait} at the hospital.",
    "The {job} said {{}} was very very {trait} after a long night at the hospital.",
    "At the hospital the {job} said {{}} was very {trait} after a long night.",
    "The {job} said {{}} was very {trait} after a night at the hospital.",
    "The {job} said {{}} was very {trait} after a long long night at the hospital.",
]
TRAITS = ["tired", "kind", "smart", "rude", "polite", "quiet", "happy", "proud", "strong", "slow", "lazy", "honest", "good", "bad"]


def plan_text(models: list[dict], *, store: str = "store", datasets: str = '["crows-pairs", "stereoset"]', extra: str = "") -> str:
    """A plan's TOML: the fixture data, no downloads, the given models (each a dict of its keys)."""
    lines = [f'store = "{store}"', f"datasets = {datasets}", f'data_dir = "{FIXTURE_DATA}"', "download = false", extra, ""]
    for model in models:
        lines.append("[[models]]")
        lines += [f"{k} = {_toml(v)}" for k, v in model.items()]
        lines.append("")
    return "\n".join(lines)


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture
def write_plan(tmp_path):
    """write_plan(models, **options) -> the path of a plan file in a fresh folder (its store beside it)."""

    def write(models: list[dict], name: str = "plan.toml", **options) -> Path:
        path = tmp_path / name
        path.write_text(plan_text(models, **options), encoding="utf-8")
        return path

    return write


def _pairs_file(path: Path, before_job: list[str]) -> Path:
    """Gender pairs of every shape × word before the job × job × trait: every word in the tiny vocabularies."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["sent_more", "sent_less", "stereo_antistereo", "bias_type"])
        for shape, word, job, trait in itertools.product(SHAPES, before_job, JOBS, TRAITS):
            stem = shape.format(job=word + job, trait=trait)
            out.writerow([stem.format("she"), stem.format("he"), "stereo", "gender"])
    return path


@pytest.fixture(scope="session")
def many_pairs(tmp_path_factory) -> Path:
    """A pairs file of 1,344 gender pairs: long enough to kill a job mid-run with SIGKILL."""
    return _pairs_file(tmp_path_factory.mktemp("pairs") / "many_pairs.csv", [""])


@pytest.fixture(scope="session")
def more_pairs(tmp_path_factory) -> Path:
    """A pairs file of 5,376 gender pairs (4 x many_pairs): long enough to `scancel` a Slurm job mid-run. Slurm first
    sends SIGTERM, which submitit's job ignores, and kills it seconds later (KillWait, and srun's own wait): a tiny
    model scores some 800 more pairs in that time, and a shorter file can end before it is killed."""
    return _pairs_file(tmp_path_factory.mktemp("pairs") / "more_pairs.csv", ["", "old ", "young ", "rich "])


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real single-node Slurm cluster for the session (skipped where Slurm is not installed, unless required)."""
    from tests.support import slurm

    why = slurm.missing()
    if why:
        slurm.skip_or_fail(why)
    cluster = slurm.start_cluster(tmp_path_factory.mktemp("slurm"))
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        cluster.stop()
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
