"""Server settings (allowed model folders, limits) and the model pool, without Streamlit."""

from __future__ import annotations

import gc
import os
import re
import threading
import time
import weakref

import pytest
import torch

from biaslens.errors import DataNotAllowedError, InputError, ModelNotAllowedError, ServerConfigError
from biaslens.serving.server import DEFAULT_MAX_MODELS, DEFAULT_MAX_UPLOAD_ROWS, ModelPool, ServerSettings


def test_defaults_and_values_from_the_environment(tmp_path):
    default = ServerSettings.from_env({})
    assert default == ServerSettings(model_dirs=(), max_tokens=None, max_upload_rows=DEFAULT_MAX_UPLOAD_ROWS, max_models=DEFAULT_MAX_MODELS)
    env = {
        "BIASLENS_MODEL_DIRS": f"{tmp_path / 'a'}:{tmp_path / 'b'}:",
        "BIASLENS_MAX_TOKENS": "64",
        "BIASLENS_MAX_UPLOAD_ROWS": "2_000",
        "BIASLENS_MAX_MODELS": " 1 ",
        "BIASLENS_MODEL": "/srv/models/bert",
    }
    got = ServerSettings.from_env(env)
    assert got.model_dirs == (tmp_path / "a", tmp_path / "b")
    assert (got.max_tokens, got.max_upload_rows, got.max_models, got.default_model) == (64, 2000, 1, "/srv/models/bert")
    assert ServerSettings.from_env({"BIASLENS_MODEL_DIRS": "*"}).model_dirs is None


@pytest.mark.parametrize(
    "name, value, fragment",
    [
        ("BIASLENS_MAX_TOKENS", "lots", "BIASLENS_MAX_TOKENS='lots' is not a whole number"),
        ("BIASLENS_MAX_TOKENS", "4", "BIASLENS_MAX_TOKENS=4 is too small: set it to at least 8"),
        ("BIASLENS_MAX_MODELS", "0", "BIASLENS_MAX_MODELS=0 is too small"),
        ("BIASLENS_MAX_UPLOAD_ROWS", "1.5", "not a whole number"),
        ("BIASLENS_MODEL_DIRS", "models", "must list absolute folders; 'models' is relative"),
    ],
)
def test_bad_values_name_the_variable(name, value, fragment):
    with pytest.raises(ServerConfigError) as info:
        ServerSettings.from_env({name: value})
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["BIASLENS_MODEL_DIRS", "BIASLENS_DATA_DIRS"])
def test_an_allowed_folder_that_is_a_loop_of_links_names_the_setting_in_one_line(tmp_path, name):
    """A listed folder that is a link to itself, or one of two links to each other: "Symlink loop from ..." (a
    RuntimeError, an OSError from Python 3.13) wherever a folder was checked; now one line when the settings are read."""
    (tmp_path / "self").symlink_to(tmp_path / "self")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "fine").mkdir()
    for loop in ("self", "a"):
        with pytest.raises(ServerConfigError) as info:
            ServerSettings.from_env({name: f"{tmp_path / 'fine'}{os.pathsep}{tmp_path / loop}"})
        assert str(info.value) == (
            f"{name} lists {tmp_path / loop}, which is a symbolic link that leads back to itself (a loop of links), so it names no "
            "folder: remove the link, or list the folder it should lead to."
        )
    late = ServerSettings(model_dirs=(tmp_path / "self",), data_dirs=(tmp_path / "a",))  # (a loop made after the settings were read)
    with pytest.raises(ServerConfigError, match=re.escape(f"The allowed folder {tmp_path / 'self'} is a symbolic link that leads back")):
        late.check_model(str(tmp_path / "fine"))
    with pytest.raises(ServerConfigError, match=re.escape(f"The allowed folder {tmp_path / 'a'} is a symbolic link that leads back")):
        late.check_data(tmp_path / "fine" / "pairs.csv")


#: Every whole-number limit with a default, by its variable (BIASLENS_<the field in capitals>), and those that may be 0.
LIMITS = "MAX_UPLOAD_ROWS MAX_MODELS MAX_UPLOAD_MB MAX_RUN_SCORES MAX_KURITA_QUERIES MAX_JOBS MAX_QUEUE INSPECT_BATCH_MS".split()
LIMITS += "LAB_MAX_STEPS LAB_MAX_CORPUS LAB_MAX_LAYERS LAB_MAX_HIDDEN LAB_MAX_SECONDS".split()
ZERO_ALLOWED = ("MAX_QUEUE", "INSPECT_BATCH_MS")


@pytest.mark.parametrize("limit", LIMITS)
def test_each_limit_is_read_from_its_variable_down_to_its_minimum(limit):
    name, field, minimum = f"BIASLENS_{limit}", limit.lower(), int(limit not in ZERO_ALLOWED)
    default = getattr(ServerSettings(), field)
    assert getattr(ServerSettings.from_env({}), field) == default
    assert getattr(ServerSettings.from_env({name: f" {minimum + 7} "}), field) == minimum + 7
    assert getattr(ServerSettings.from_env({name: str(minimum)}), field) == minimum
    assert getattr(ServerSettings.from_env({name: ""}), field) == default
    with pytest.raises(ServerConfigError, match=f"{name}={minimum - 1} is too small: set it to at least {minimum}"):
        ServerSettings.from_env({name: str(minimum - 1)})
    with pytest.raises(ServerConfigError, match=f"{name}='many' is not a whole number"):
        ServerSettings.from_env({name: "many"})


# ---------------------------------------------------------------------------------------
# Which model folders may be loaded
# ---------------------------------------------------------------------------------------


@pytest.fixture
def folders(tmp_path, monkeypatch):
    from huggingface_hub import constants

    made = {}
    for name in ("hf-cache/models--x/snapshots/abc", "biaslens-cache/lab/m", "allowed/m", "outside/m", "default/m"):
        made[name.split("/")[0]] = tmp_path / name
        (tmp_path / name).mkdir(parents=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "biaslens-cache"))
    return made


def test_only_allowed_folders_load(folders, tmp_path):
    server = ServerSettings.from_env({"BIASLENS_MODEL_DIRS": str(tmp_path / "allowed"), "BIASLENS_MODEL": str(folders["default"])})
    for name in ("hf-cache", "biaslens-cache", "allowed", "default"):
        server.check_model(str(folders[name]))  # the HF cache, biaslens's cache (lab models), configured, $BIASLENS_MODEL
    server.check_model("bert-base-cased")  # hub ids are not folders
    server.check_model("org/model")
    with pytest.raises(ModelNotAllowedError) as info:
        server.check_model(str(folders["outside"]))
    assert "BIASLENS_MODEL_DIRS" in str(info.value) and str(folders["outside"]) in str(info.value)
    with pytest.raises(ModelNotAllowedError):  # a folder that does not exist says nothing about existence
        server.check_model(str(tmp_path / "outside" / "nothing-here"))
    # Without configuration only the two caches are allowed.
    with pytest.raises(ModelNotAllowedError):
        ServerSettings.from_env({}).check_model(str(folders["allowed"]))
    # `*` lets any folder through (a researcher's own machine).
    ServerSettings.from_env({"BIASLENS_MODEL_DIRS": "*"}).check_model(str(folders["outside"]))


def test_links_and_dot_dot_do_not_lead_out_of_an_allowed_folder(folders, tmp_path, monkeypatch):
    server = ServerSettings.from_env({"BIASLENS_MODEL_DIRS": str(tmp_path / "allowed")})
    link = tmp_path / "allowed" / "link"
    link.symlink_to(folders["outside"], target_is_directory=True)
    with pytest.raises(ModelNotAllowedError):
        server.check_model(str(link))
    with pytest.raises(ModelNotAllowedError):
        server.check_model(f"{tmp_path}/allowed/../outside/m")
    monkeypatch.chdir(tmp_path / "allowed")  # relative paths are resolved from the server's folder, as load_model does
    server.check_model("./m")
    with pytest.raises(ModelNotAllowedError):
        server.check_model("../outside/m")


def test_the_model_folders_of_the_allowed_folders_are_listed(folders, tmp_path):
    """What the app offers in its model lists: each allowed folder's model folders (a config.json inside), by name."""
    allowed = tmp_path / "allowed"
    for name in ("Zeta", "alpha", "not-a-model"):
        (allowed / name).mkdir()
    for folder in (allowed / "Zeta", allowed / "alpha", folders["default"], folders["outside"]):
        (folder / "config.json").write_text("{}")
    (allowed / "link").symlink_to(folders["outside"], target_is_directory=True)  # a model, but outside: left out
    server = ServerSettings.from_env({"BIASLENS_MODEL_DIRS": f"{allowed}:{folders['default']}:{tmp_path / 'missing'}"})
    assert server.model_folders() == [allowed / "alpha", allowed / "Zeta", folders["default"]]
    assert ServerSettings.from_env({"BIASLENS_MODEL_DIRS": "*"}).model_folders() == []  # any folder: nothing to list
    assert ServerSettings.from_env({}).model_folders() == []


def test_only_allowed_folders_are_read_as_datasets(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "biaslens-cache"))
    server = ServerSettings.from_env({"BIASLENS_DATA_DIRS": str(tmp_path / "allowed"), "BIASLENS_DATA_DIR": str(tmp_path / "default")})
    for path in ("allowed/mine.csv", "allowed/sub", "default", "default/x/pairs.jsonl", "biaslens-cache/datasets/crows-pairs"):
        server.check_data(str(tmp_path / path))  # configured, $BIASLENS_DATA_DIR, biaslens's cache (downloads)
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "link.csv").symlink_to("/etc/passwd")
    for path in ("/etc/passwd", f"{tmp_path}/allowed/../secret.csv", f"{tmp_path}/allowed/link.csv", "/nonexistent/pairs.csv"):
        with pytest.raises(DataNotAllowedError) as info:
            server.check_data(path)
        assert "outside the folders this server may read datasets from" in str(info.value) and "BIASLENS_DATA_DIRS" in str(info.value)
    with pytest.raises(DataNotAllowedError):  # without configuration only biaslens's cache
        ServerSettings.from_env({}).check_data(str(tmp_path / "allowed" / "mine.csv"))
    ServerSettings.from_env({"BIASLENS_DATA_DIRS": "*"}).check_data("/etc/passwd")  # a researcher's own machine
    with pytest.raises(ServerConfigError, match="BIASLENS_DATA_DIRS must list absolute folders"):
        ServerSettings.from_env({"BIASLENS_DATA_DIRS": "data"})


# ---------------------------------------------------------------------------------------
# Sentence length, rows per file
# ---------------------------------------------------------------------------------------


def test_the_token_limit_refuses_longer_sentences_with_the_limit_in_the_message(tiny_bert):
    assert ServerSettings.from_env({}).limit(tiny_bert) is tiny_bert
    limited = ServerSettings.from_env({"BIASLENS_MAX_TOKENS": "10"}).limit(tiny_bert)
    assert len(limited.encode("The nurse was tired.")) <= 10
    with pytest.raises(InputError) as info:
        limited.encode("The nurse was very tired after a long night at the hospital.")
    assert "this server (BIASLENS_MAX_TOKENS) accepts at most 10" in str(info.value)


def test_row_limit_for_a_users_file():
    server = ServerSettings.from_env({"BIASLENS_MAX_UPLOAD_ROWS": "3"})
    server.check_rows(3, "x.csv")
    server.check_upload(b"sent_more,sent_less\na,b\nc,d\ne,f\n", "x.csv", header=True)
    server.check_upload(b"one\n\n two\nthree\n  \n", "list.txt")  # blank lines are not rows
    with pytest.raises(InputError) as info:
        server.check_upload(b"one\ntwo\nthree\nfour\n", "list.txt")
    assert "list.txt has 4 rows; this server accepts at most 3 per file or pasted list (BIASLENS_MAX_UPLOAD_ROWS)" in str(info.value)


# ---------------------------------------------------------------------------------------
# The model pool
# ---------------------------------------------------------------------------------------


class Loaded:
    def __init__(self, name, device="cpu"):
        self.name, self.device = name, torch.device(device)


def test_least_recently_used_is_evicted():
    pool = ModelPool(2)
    loads = []

    def loader(name):
        return lambda: loads.append(name) or Loaded(name)

    a = pool.get("a", loader("a"))
    pool.get("b", loader("b"))
    assert pool.get("a", loader("a")) is a  # a is now the most recently used
    pool.get("c", loader("c"))
    assert pool.keys() == ["a", "c"] and loads == ["a", "b", "c"]
    pool.get("b", loader("b"))
    assert pool.keys() == ["c", "b"] and loads == ["a", "b", "c", "b"]
    pool.get("d", loader("d"), capacity=1)  # the operator's setting, read at each call
    assert pool.keys() == ["d"] and pool.evictions == 4


def test_a_failed_load_is_not_kept():
    pool = ModelPool(2)

    def fail():
        raise InputError("no such model")

    with pytest.raises(InputError):
        pool.get("x", fail)
    assert "x" not in pool
    assert pool.get("x", lambda: Loaded("x")).name == "x"


def test_many_sessions_asking_at_once_load_a_model_once():
    pool = ModelPool(2)
    loads = []

    def slow(name):
        def load():
            loads.append(name)
            time.sleep(0.2)
            return Loaded(name)

        return load

    got = []
    threads = [threading.Thread(target=lambda k=k: got.append(pool.get(k % 2, slow(k % 2)))) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(loads) == [0, 1]
    assert len({id(v) for v in got}) == 2


def test_an_evicted_model_is_freed(model_dirs):
    from biaslens.engine.models import load_model

    pool = ModelPool(1)
    first = pool.get("bert", lambda: load_model(str(model_dirs["bert-cased"])))
    first._eager_model()  # the attention twin goes too
    gone = weakref.ref(first)
    del first
    pool.get("albert", lambda: load_model(str(model_dirs["albert"])))
    gc.collect()
    assert gone() is None
    assert pool.keys() == ["albert"]


def test_evicting_a_cuda_model_empties_the_cuda_cache(monkeypatch):
    emptied = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    pool = ModelPool(1)
    pool.get("cpu", lambda: Loaded("cpu"))
    pool.get("gpu", lambda: Loaded("gpu", "cuda"))
    assert emptied == []  # a CPU model went
    pool.get("other", lambda: Loaded("other"))
    assert emptied == [True]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_memory_comes_back_after_eviction(model_dirs):
    from biaslens.engine.models import load_model

    pool = ModelPool(1)
    gc.collect()
    torch.cuda.empty_cache()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    pool.get("roberta", lambda: load_model(str(model_dirs["roberta"]), device="cuda"))
    assert torch.cuda.memory_allocated() > allocated
    pool.get("cpu", lambda: load_model(str(model_dirs["bert-cased"]), device="cpu"))
    assert torch.cuda.memory_allocated() == allocated  # the weights are gone
    assert torch.cuda.memory_reserved() <= reserved  # and handed back to the GPU


def test_the_pool_holds_at_most_its_capacity_with_loads_in_flight():
    """Models in the pool and models being loaded are at most `capacity` together (issue 36, item 2): eight sessions
    loading eight different models at once load them at most two at a time."""
    import threading
    import time

    pool = ModelPool(2)
    held, most, lock = [0], [0], threading.Lock()

    def load(name):
        with lock:
            held[0] = len(pool) + pool._in_flight
            most[0] = max(most[0], held[0])
        time.sleep(0.05)
        return name

    threads = [threading.Thread(target=pool.get, args=(f"m{i}", lambda i=i: load(f"m{i}"))) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] <= 2 and pool.peak <= 2 and len(pool) == 2
    assert pool.evictions == 6


def test_a_run_on_one_s_own_machine_opens_any_folder_and_a_shared_server_keeps_its_rule(tmp_path):
    """Issue 30, item 4: BIASLENS_LOCAL=on (scripts/app.sh) opens the user's own folders, only where the app listens on
    this machine alone; every refusal gives the one line that does it."""
    from biaslens.serving.server import LOCAL_RUN, is_loopback

    folder = tmp_path / "my-model"
    (folder / "x").mkdir(parents=True)
    local = ServerSettings.from_env({"BIASLENS_LOCAL": "on", "BIASLENS_MODEL_DIRS": "/srv/models"}, address="localhost")
    assert local.local and local.model_dirs is None and local.data_dirs is None
    local.check_model(str(folder))
    local.check_model_files(folder)
    local.check_data(tmp_path / "pairs.csv")
    assert all(is_loopback(a) for a in ("localhost", "127.0.0.1", "127.0.1.1", "::1", "[::1]", "LOCALHOST"))
    assert not any(is_loopback(a) for a in ("", None, "0.0.0.0", "192.168.1.5", "example.org"))
    for address in ("0.0.0.0", "", None, "10.0.0.2"):
        with pytest.raises(ServerConfigError, match="BIASLENS_LOCAL=on opens every folder") as refused:
            ServerSettings.from_env({"BIASLENS_LOCAL": "on"}, address=address)
        assert "--server.address localhost" in str(refused.value)
    shared = ServerSettings.from_env({"BIASLENS_MODEL_DIRS": str(tmp_path / "allowed")}, address="0.0.0.0")
    assert not shared.local
    with pytest.raises(ModelNotAllowedError) as model:
        shared.check_model(str(folder))
    with pytest.raises(DataNotAllowedError) as data:
        shared.check_data(tmp_path / "pairs.csv")
    for refusal in (model, data):
        assert "ask its operator" in str(refusal.value) and f"On your own machine, start the app with `{LOCAL_RUN}`" in str(refusal.value)


def test_scripts_app_sh_binds_to_this_machine_and_opens_one_s_folders_unless_given_an_address(tmp_path):
    """What `bash scripts/app.sh` runs after its setup step: `biaslens app` with the arguments given (a copy of the script
    with its setup step and the command replaced); the address and the local folders are `biaslens app`'s
    (tests/engine/test_cli_app.py)."""
    import os
    import shutil
    import stat
    import subprocess

    from tests.support import REPO

    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "app.sh", tmp_path / "scripts" / "app.sh")
    (tmp_path / "scripts" / "setup.sh").write_text("exit 0\n")
    python = tmp_path / ".venv" / "bin" / "biaslens"
    python.parent.mkdir(parents=True)
    python.write_text('#!/usr/bin/env bash\necho "LOCAL=${BIASLENS_LOCAL:-} ARGS=$*"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    env = {k: v for k, v in os.environ.items() if k != "BIASLENS_LOCAL"}

    def run(*args: str) -> str:
        return subprocess.run(["bash", str(tmp_path / "scripts" / "app.sh"), *args], env=env, capture_output=True, text=True, check=True).stdout

    assert run("--server.port", "8502") == "LOCAL= ARGS=app --server.port 8502\n"
    assert run("--server.address", "0.0.0.0") == "LOCAL= ARGS=app --server.address 0.0.0.0\n"  # a shared server
