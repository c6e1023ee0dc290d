"""Trained lab models in the cache: naming, finding, listing, loading, and training into place (`train_lab_model`)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from biaslens.errors import InputError, ModelLoadError, OutputError
from biaslens.data.export import current_umask, safe_csv, to_json
from biaslens.paths import default_cache_dir
from biaslens.lab.corpus import generate_corpus, heldout_frame
from biaslens.lab.settings import DEFAULT_LAB_SCENARIO, LAB_FORMAT, LabSettings, describe_settings, scenario_settings
from biaslens.lab.training import MAX_LENGTH, TrainingProgress, _encode_corpus, _train, smoothed_loss, train_tokenizer
from biaslens.engine.testing import wrap_tokenizer

LAB_FILE = "lab.json"
CORPUS_FILE = "corpus.txt"
PAIRS_FILE = "heldout_pairs.csv"


@dataclass(frozen=True)
class LabModel:
    """A trained lab model: an ordinary Hugging Face model folder plus what made it."""

    path: Path
    settings: LabSettings
    training: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def label(self) -> str:
        """A description for people, e.g. in the app's model list."""
        return f"bias lab: {describe_settings(self.settings)}"


def lab_root(cache_dir: str | Path | None = None) -> Path:
    """The folder that holds the lab models: <cache>/lab."""
    return Path(cache_dir).expanduser() if cache_dir else default_cache_dir() / "lab"


def lab_model_dir(settings: LabSettings, cache_dir: str | Path | None = None) -> Path:
    """Where the model of these settings lives: <cache>/lab/<scenario>-<hash of the settings>."""
    return lab_root(cache_dir) / f"{settings.scenario}-{settings.key()}"


_REQUIRED_FILES = (LAB_FILE, "config.json", "model.safetensors", "tokenizer.json", PAIRS_FILE)


def load_lab_model(path: str | Path) -> LabModel:
    """A lab model folder (as written by `train_lab_model`) with its settings."""
    folder = Path(path).expanduser()
    missing = [f for f in _REQUIRED_FILES if not (folder / f).is_file()]
    if missing:
        raise ModelLoadError(f"{folder} is not a bias-lab model folder (missing {', '.join(missing)}); train one with `biaslens lab train`.")
    try:
        data = json.loads((folder / LAB_FILE).read_text())
        settings = LabSettings.from_dict(data["settings"])
    except (OSError, ValueError, KeyError, TypeError, InputError) as exc:
        raise ModelLoadError(f"{folder / LAB_FILE} is unreadable ({exc}); delete the folder and train again.") from exc
    return LabModel(folder.resolve(), settings, data.get("training", {}))


def find_lab_model(settings: LabSettings, cache_dir: str | Path | None = None) -> LabModel | None:
    """The cached model of these settings, or None if it has not been trained yet."""
    folder = lab_model_dir(settings, cache_dir)
    if not folder.is_dir():
        return None
    try:
        return load_lab_model(folder)
    except ModelLoadError:
        return None


def list_lab_models(cache_dir: str | Path | None = None) -> list[LabModel]:
    """Every trained lab model in the cache, newest first."""
    root = lab_root(cache_dir)
    found = []
    for folder in root.iterdir() if root.is_dir() else ():
        if folder.is_dir() and not folder.name.startswith("."):
            try:
                found.append(load_lab_model(folder))
            except ModelLoadError:
                continue
    return sorted(found, key=lambda m: m.training.get("created", ""), reverse=True)


def default_lab_settings() -> LabSettings:
    """The settings of the model offered when no other model can be loaded."""
    return scenario_settings(DEFAULT_LAB_SCENARIO)


def cached_lab_model_path(cache_dir: str | Path | None = None) -> Path | None:
    """The folder of the default lab model if it has been trained, else None (nothing is trained here)."""
    model = find_lab_model(default_lab_settings(), cache_dir)
    return model.path if model else None


def default_lab_model(cache_dir: str | Path | None = None, progress: TrainingProgress | None = None) -> LabModel:
    """The model offered when the hub cannot be reached: the default preset, trained here once and then cached."""
    return train_lab_model(default_lab_settings(), cache_dir=cache_dir, progress=progress)


def lab_model_of(name: str | Path) -> LabModel | None:
    """The lab model in folder `name`, or None if `name` is not a bias-lab model folder (e.g. a hub id)."""
    try:
        folder = Path(str(name).strip()).expanduser()
        if not str(name).strip() or not (folder / LAB_FILE).is_file():
            return None
        return load_lab_model(folder)
    except (OSError, ModelLoadError):
        return None


def lab_model_of_pairs(path: str | Path) -> LabModel | None:
    """The lab model whose held-out pairs file `path` is, or None (e.g. a benchmark's file)."""
    path = Path(str(path).strip()).expanduser()
    return lab_model_of(path.parent) if path.name == PAIRS_FILE else None


def sanity_sentences(model: LabModel, n: int = 8) -> tuple[str, ...]:
    """`n` sentences of the model's own training corpus, for `biaslens.analyses.sanity.check_model`.

    A lab model knows only its templates and words, so the usual sanity check on plain
    English would call it untrained; its own corpus tells whether training worked.
    """
    sentences: list[str] = []
    try:
        with (model.path / CORPUS_FILE).open(encoding="utf-8") as f:
            for line in f:
                if line.strip() and line.strip() not in sentences:
                    sentences.append(line.strip())
                if len(sentences) >= n:
                    break
    except OSError as exc:
        raise ModelLoadError(f"{model.path / CORPUS_FILE} is unreadable ({exc}); delete the folder and train again.") from exc
    return tuple(sentences)


def _save_quietly(model: Any, tokenizer: Any, folder: Path) -> None:
    """save_pretrained without transformers' own progress bar (ours is already on screen)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    finally:
        hf_logging.enable_progress_bar()


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def estimated_bytes(settings: LabSettings) -> int:
    """About how much disk a lab model of these settings takes, with room to spare: its float32 weights (a vocabulary of a
    few thousand pieces), the corpus and held-out pairs as text, twice over."""
    h, layers = settings.hidden_size, settings.num_layers
    weights = 4 * (12 * layers * h * h + (4_000 + MAX_LENGTH) * h)
    return 2 * (weights + 80 * settings.corpus_size) + 1_000_000


def train_lab_model(
    settings: LabSettings,
    *,
    cache_dir: str | Path | None = None,
    progress: TrainingProgress | None = None,
) -> LabModel:
    """Train (or find in the cache) the tokenizer and the (masked or causal) LM of these settings.

    The folder is written under a temporary name and renamed into place when complete,
    so a killed training leaves no half-written model; a folder that another process
    completed first is kept. `progress(step, steps, loss)` is called after every step.
    """
    found = find_lab_model(settings, cache_dir)
    if found is not None:
        return found
    target = lab_model_dir(settings, cache_dir)
    folder = target.parent
    # Before training: the models folder must be a folder this process can write, with room for the model (one line each).
    if folder.exists() and not folder.is_dir() or any(p.exists() and not p.is_dir() for p in folder.parents):
        blocking = folder if folder.exists() and not folder.is_dir() else next(p for p in folder.parents if p.exists() and not p.is_dir())
        raise OutputError(f"The lab models folder {folder} cannot be used: {blocking} is a file, not a folder. Choose another (--models-dir).")
    try:
        str(target).encode("utf-8")
    except UnicodeEncodeError:  # a name of bytes that are not UTF-8 (read as surrogates): the tokenizer saves only to UTF-8 paths
        shown = str(folder).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # (its bytes, as \xff)
        raise OutputError(
            f"The lab models folder {shown} cannot be used: its name is not UTF-8, which the tokenizer's files need. Choose another (--models-dir)."
        ) from None
    try:
        if target.exists():  # an unreadable leftover (a file deleted by hand): ours to replace
            shutil.rmtree(target)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder))
    except OSError as exc:
        raise OutputError(f"The lab models folder {folder} cannot be written ({_reason(exc)}): choose another (--models-dir).") from None
    need = estimated_bytes(settings)
    free = shutil.disk_usage(folder).free
    if free < need:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(
            f"The lab models folder {folder} has {free / 1e6:,.1f} MB free; this model needs about {need / 1e6:,.1f} MB: "
            "free some space or choose another folder (--models-dir)."
        )
    tmp.chmod(0o777 & ~current_umask())  # mkdtemp's 0700 would hide the folder from other users of a shared cache
    try:
        started = time.perf_counter()
        sentences = generate_corpus(settings)
        tok = train_tokenizer([s.text for s in sentences])
        corpus = _encode_corpus(tok, sentences)
        model, losses = _train(settings, corpus, tok.get_vocab_size(), tok.token_to_id("[MASK]"), progress)
        seconds = time.perf_counter() - started
        causal = {"bos_token": "[CLS]", "eos_token": "[SEP]"} if settings.kind == "causal" else {}  # a causal model reads after its BOS
        try:
            _save_quietly(model, wrap_tokenizer(tok, MAX_LENGTH, **causal), tmp)
            (tmp / CORPUS_FILE).write_text("".join(s.text + "\n" for s in sentences), encoding="utf-8")
            (tmp / PAIRS_FILE).write_text(safe_csv(heldout_frame(settings)), encoding="utf-8")
        except OSError as exc:  # the disk filled up during training: said in one line, nothing half-written is left
            raise OutputError(
                f"The lab model was trained but cannot be saved in {folder} ({_reason(exc)}): free some space or choose another "
                "folder (--models-dir), then train again."
            ) from None
        training = {
            "seconds": round(seconds, 2),
            "final_loss": smoothed_loss(losses, settings.steps),
            "losses": [round(x, 4) for x in losses],
            "vocab_size": tok.get_vocab_size(),
            "parameters": sum(p.numel() for p in model.parameters()),
            "corpus_sentences": len(sentences),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__,
        }
        (tmp / LAB_FILE).write_text(to_json({"format": LAB_FORMAT, "settings": settings.to_dict(), "training": training}), encoding="utf-8")
        for path in tmp.iterdir():  # safetensors writes its file 0600: every file gets 0666 less the umask, as docs/operators.md says
            path.chmod(0o666 & ~current_umask())
        try:
            os.replace(tmp, target)
        except OSError:
            if find_lab_model(settings, cache_dir) is None:  # not a finished twin: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    model_found = find_lab_model(settings, cache_dir)
    if model_found is None:
        raise ModelLoadError(f"The lab model was trained but {target} cannot be read back.")
    return model_found
