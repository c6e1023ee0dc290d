"""The way `biaslens evaluate`'s options travel through the code: which files the calls that carry them enter.

`trace(argv)` runs `biaslens.cli.main.main(argv)` (an `evaluate` command line) under `sys.setprofile` and follows
the options (docs/architecture.md, "The way through evaluate", defines what is counted):

* **the options** are the argparse namespace, the objects that name a choice of the run (an `EvaluationPlan`, a
  `ModelSpec`, a `RunOptions`, a `ResolvedRun`, a `Compat`, a `Precision`, a `Convention`, a sequence of metric keys,
  a text that names a scoring mode, a precision or a convention) and what they make: whatever a link returns, not a
  number or a text, when the link got an option besides the object it is a method of (the model the CLI's loader
  makes from a `ModelSpec`, the result `evaluate_run` makes; not what a method of the model returns);
* a **link** is a call of a Python function of `biaslens/` made by `cmd_evaluate` or by another link, with an option
  among its arguments (`self` included). Comprehensions and generator expressions are part of the function that runs
  them (Python 3.11 gives them frames of their own), and so are the library frames between two functions of
  `biaslens/` (a dataclass's `__init__` calling its `__post_init__`);
* a link made again by the same function to the same function (in a loop over pairs or metrics, or from another
  line) is the same link: the way is the shape of the calls, not how many pairs a run has;
* an **entry** is a link whose function is in another file than its caller's; a **re-entry** an entry into a file the
  way had entered before; an entry **upward** one into a file of a higher layer than its caller's (the layers of
  `.importlinter`: a call back from the engine into the CLI's loader, say).

`python -m tests.support.evaluate_path` prints the way for the suite's tiny BERT on the fixture data.
"""

from __future__ import annotations

import argparse
import enum
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Sequence

#: The layers of `.importlinter`, top to bottom (a folder of `biaslens/`, or the package's own files at the top).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("report",),
    ("figures", "serving"),
    ("lab", "kurita", "zoo"),
    ("analyses",),
    ("engine",),
    ("data",),
    ("errors.py", "paths.py", "version.py"),
)


@dataclass
class EvaluatePath:
    """The links of one run, in order: (file, function, entered from another file, upward)."""

    links: list[tuple[str, str, bool, bool]] = field(default_factory=list)

    @property
    def entries(self) -> int:
        return sum(entered for _, _, entered, _ in self.links)

    @property
    def upward(self) -> int:
        return sum(up for _, _, _, up in self.links)

    def entries_of(self) -> Counter[str]:
        """Per file, how many times the way entered it."""
        return Counter(file for file, _, entered, _ in self.links if entered)

    @property
    def reentries(self) -> int:
        counts = self.entries_of()
        return sum(n - 1 for n in counts.values())

    def lines(self) -> list[str]:
        out = [f"{'  ' if not entered else '->'} {'up ' if up else '   '}{file}::{name}" for file, name, entered, up in self.links]
        by_file = ", ".join(f"{f} {n}" for f, n in self.entries_of().most_common())
        out.append(f"{self.entries} entries ({self.reentries} re-entries, {self.upward} upward) into {len(self.entries_of())} files: {by_file}")
        return out


def _layer(file: str) -> int:
    """How high a file of `biaslens/` is (0 the top); the package's `__init__` and `__main__` are the top."""
    part = file.split("/")[1] if "/" in file else file
    for rank, names in enumerate(LAYERS):
        if part in names:
            return rank
    return 0


def _option_kinds() -> tuple[tuple[type, ...], set[str], set[str]]:
    from biaslens.analyses.pipeline import EvaluationPlan
    from biaslens.engine.conventions import CONVENTIONS, Convention
    from biaslens.engine.metrics import METRICS, Compat
    from biaslens.engine.options import ModelSpec, Precision, RunOptions

    from biaslens.engine import evaluation

    resolved = getattr(evaluation, "ResolvedRun", None)  # (a checkout before the run was resolved once has none)
    types = (argparse.Namespace, EvaluationPlan, ModelSpec, RunOptions, Convention, Compat, Precision, *([resolved] if resolved else []))
    names = {c.value for c in Compat} | {p.value for p in Precision} | set(CONVENTIONS)
    return types, names, set(METRICS)


def _is_option(value: Any, types: tuple[type, ...], names: set[str], metrics: set[str]) -> bool:
    if isinstance(value, types):
        return True
    if type(value) is str:
        return value in names
    if isinstance(value, (list, tuple)) and value and not isinstance(value, enum.Enum):
        return all(type(v) is str and v in metrics for v in value)
    return False


def trace(argv: Sequence[str]) -> EvaluatePath:
    """Run `biaslens <argv>` (an evaluate command) and return the way its options went."""
    import biaslens
    from biaslens.cli.main import main

    root = Path(biaslens.__file__).resolve().parent
    prefix = str(root) + "/"
    types, names, metrics = _option_kinds()
    path = EvaluatePath()
    links: dict[FrameType, tuple[str, bool]] = {}  # frame on the way -> (its file, whether it got an option besides itself)
    seen: set[tuple[Any, Any]] = set()  # (caller's code, callee's code) of the links counted
    made: dict[int, Any] = {}  # id -> what a link returned (kept, so that no id is reused)
    started = False

    def file_of(frame: FrameType) -> str | None:
        name = frame.f_code.co_filename
        return "biaslens/" + name[len(prefix) :] if name.startswith(prefix) else None

    def options_in(frame: FrameType) -> tuple[bool, bool]:
        """(an argument is an option, an argument besides `self` / `cls` is)."""
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        found = []
        for name in code.co_varnames[:count]:
            value = frame.f_locals.get(name)
            values = [value, *(value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else ())]
            if any(_is_option(v, types, names, metrics) or id(v) in made for v in values):
                found.append(name)
        return bool(found), any(name not in ("self", "cls") for name in found)

    def profile(frame: FrameType, event: str, value: Any) -> None:
        nonlocal started
        if event == "return":
            link = links.pop(frame, None)
            if link is not None and link[1] and value is not None and not isinstance(value, (str, int, float, bytes)):
                made[id(value)] = value  # made from the options (not only from the object a method belongs to): an option too
            return
        if event != "call" or (file := file_of(frame)) is None:
            return
        if not started:
            if frame.f_code.co_name == "cmd_evaluate" and file == "biaslens/cli/evaluate.py":
                started, links[frame] = True, (file, True)
            return
        caller = frame.f_back
        while caller is not None and caller not in links and file_of(caller) is None:
            caller = caller.f_back  # through the library's frames (a dataclass's __init__, contextlib): part of the caller
        if caller is None or caller not in links:
            return
        if frame.f_code.co_name.startswith("<") and frame.f_code.co_name != "<lambda>":
            links[frame] = links[caller]  # a comprehension runs as part of its function
            return
        carried, derives = options_in(frame)
        if not carried:
            return
        links[frame] = (file, derives)
        if (caller.f_code, frame.f_code) in seen:
            return
        seen.add((caller.f_code, frame.f_code))
        entered = file != links[caller][0]
        path.links.append((file, frame.f_code.co_qualname, entered, entered and _layer(file) < _layer(links[caller][0])))

    threading.setprofile(None)
    sys.setprofile(profile)
    try:
        code = main(list(argv))
    finally:
        sys.setprofile(None)
    if code != 0:
        raise RuntimeError(f"biaslens {' '.join(argv)} exited {code}")
    return path


def tiny_evaluate_argv(model: str | Path, out: str | Path) -> list[str]:
    """The command line the test measures: the tiny BERT on the fixture CrowS-Pairs' first four pairs, the default metrics."""
    from tests.support import FIXTURE_DATA

    return ["evaluate", "--model", str(model), "--dataset", "crows-pairs", "--data-dir", str(FIXTURE_DATA), "--limit", "4"] + [
        "--no-download",
        "--no-cache",
        "--out",
        str(out),
    ]


def _tiny_bert(folder: Path) -> Path:
    from biaslens.engine.testing import build_random_model
    from tests.support.tiny_tokenizers import build_tiny_tokenizers, vocab_size

    tokenizer = build_tiny_tokenizers(folder / "tokenizers")["bert-cased"]
    return build_random_model("bert-cased", tokenizer, folder / "bert", vocab_size=vocab_size("bert-cased", tokenizer))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        way = trace(tiny_evaluate_argv(_tiny_bert(Path(tmp)), Path(tmp) / "out"))
    print("\n".join(way.lines()))
