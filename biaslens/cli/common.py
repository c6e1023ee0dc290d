"""What the subcommands share: argument groups, progress on stderr, model loading, the model's caveats.

Progress: on a terminal (or with `--progress`) a tqdm bar; otherwise (a log, CI, `2> file`)
a plain line when the work starts, one every `LINE_INTERVAL` seconds and one when it ends,
instead of thousands of carriage-return updates.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TextIO

from biaslens.engine.options import DEFAULT_COMPAT, DEFAULT_DEVICE, DEFAULT_DTYPE, ModelSpec

#: Seconds between two plain progress lines.
LINE_INTERVAL = 10.0


# ---------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------

#: Exit status of a bad argument or bad input (one line on stderr).
EXIT_ERROR = 2

#: Every command and its one-line help, in the order `--help` lists them; `biaslens.cli.<command>` adds its options
#: (`register(subparsers)`) and is imported only when that command runs (`main.build_parser`).
COMMANDS: dict[str, str] = {
    "evaluate": "score a dataset; writes pairs.csv and summary.json",
    "compare": "two or more models on the same pairs: bias-score differences (paired bootstrap), McNemar's exact test on verdicts, rank stability",
    "inspect": "score one sentence pair, token by token",
    "anatomy": "where a pair's bias lives: attribution to the input tokens, the logit lens layer by layer, every head ablated",
    "score": "score any texts token by token (masked or causal models): one row per token, per word or per text",
    "metrics": "list the metrics with formula, direction and citation",
    "models": "list the model presets",
    "datasets": "show where the datasets are; --fetch downloads missing ones",
    "lab": "bias lab: train a small masked or causal LM with a planted bias and see which metrics detect it",
    "kurita": "Kurita et al. (2019): template bias scores, attribute-list shares, WEAT-style tests",
    "report": "reproduce Kaneko & Bollegala (2022): Tables 1-5 and Figure 1 as CSV, Markdown and HTML",
    "shuffle": "one sentence's tokens before and after shuffling (Kaneko & Bollegala 2022, Table 4)",
    "conventions": "one model's bias scores under every scoring convention (the peers' for causal models, the likelihood metrics for "
    "masked ones) and the pairs that flip",
    "zoo": "many models x datasets as jobs (Slurm or this machine), resumable, kept in a results store: run, status, merge, import",
    "app": "start the web app (http://localhost:8501); Streamlit's options pass through, e.g. --server.port 8502",
}


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")


#: The largest whole number an option takes unless it says less: what numpy and torch hold in 64 bits, with room.
MAX_WHOLE = 2**62
#: The largest seed (numpy's and torch's seeds are 32-bit without a sign).
MAX_SEED = 2**32 - 1


def bounded_int(low: int, high: int, what: str = "a whole number") -> Callable[[str], int]:
    """argparse type: a whole number from `low` to `high`, else one line before any work ("expected a seed from 0 to ...")."""

    def parse(text: str) -> int:
        try:
            value = int(str(text).strip().replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} from {low:,} to {high:,}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {what} from {low:,} to {high:,}, got {text!r}")
        return value

    parse.__name__ = what  # (argparse names the type in its own messages)
    return parse


#: argparse type: an integer from 1 to `MAX_WHOLE`.
positive_int = bounded_int(1, MAX_WHOLE, "a positive integer")
#: argparse type: a seed, 0 to `MAX_SEED`.
seed_int = bounded_int(0, MAX_SEED, "a seed")


def bounded_float(low: float, high: float, what: str) -> Callable[[str], float]:
    """argparse type: a finite number from `low` to `high` (no nan, no inf), else one line before any work."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} from {low:g} to {high:g}, got {text!r}") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"expected {what} from {low:g} to {high:g}, got {text!r}")
        return value

    parse.__name__ = what
    return parse


def add_model_args(p: argparse.ArgumentParser, *, several: bool = False) -> None:
    """--model (one, or several with `several`), --revision, --device, --dtype, --device-map, --allow-pickle (see `ModelSpec`)."""
    from biaslens.engine.models import DEFAULT_MODEL, DEVICE_MAPS, DTYPES

    if several:  # --model A B, or --model A --model B; None = the default model
        p.add_argument("--model", nargs="+", action="extend", default=None, help=f"hub ids or local folders (default {DEFAULT_MODEL})")
    else:
        p.add_argument("--model", default=DEFAULT_MODEL, help=f"hub id or local folder (default {DEFAULT_MODEL})")
    p.add_argument("--revision", default=None, help="hub revision (branch, tag or commit)")
    p.add_argument("--device", default=DEFAULT_DEVICE, help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N, mps")
    p.add_argument("--dtype", default=DEFAULT_DTYPE, choices=list(DTYPES), help="half precision needs a GPU")
    p.add_argument(
        "--device-map", default=None, choices=[m for m in DEVICE_MAPS if m],
        help="auto: spread a model too large for one GPU over every GPU (then the CPU)",
    )  # fmt: skip
    p.add_argument("--allow-pickle", action="store_true", help="allow pickle (.bin) weights, which can run code: only for sources you trust")
    from biaslens.engine.causal import FIRST_TOKEN_HELP

    p.add_argument(
        "--first-token",
        default=None,
        choices=[policy.value for policy in FIRST_TOKEN_HELP],
        help="a causal model's first token: " + "; ".join(f"{k.value}: {v}" for k, v in FIRST_TOKEN_HELP.items()) + " (default bos)",
    )


def add_convention_arg(p: argparse.ArgumentParser) -> None:
    from biaslens.choices.conventions import CHOICE_CONVENTIONS
    from biaslens.engine.conventions import CONVENTIONS

    extra = [k for k in CHOICE_CONVENTIONS if k not in CONVENTIONS]
    p.add_argument(
        "--convention",
        default="default",
        choices=[*CONVENTIONS, *extra, "all"],
        help="a causal model's pairs scored as a peer does: "
        + "; ".join(f"{k}: {c.summary}" for k, c in CONVENTIONS.items())
        + ". A multiple-choice dataset (bbq, winogender) is read under "
        + "; ".join(f"{k}: {c.summary}" for k, c in CHOICE_CONVENTIONS.items())
        + " (default lm-eval; all: every one that applies)",
    )


def add_compat_arg(p: argparse.ArgumentParser) -> None:
    from biaslens.engine.metrics import COMPAT_MODES

    p.add_argument(
        "--compat",
        default=DEFAULT_COMPAT.value,
        choices=list(COMPAT_MODES),
        help="default follows the papers' equations; kaneko2022 reproduces the released reference code",
    )


def add_command(
    sub: Any, name: str, func: Callable[[Any], int], add_arguments: Callable[[Any], Any] | None = None, *, model: str | None = "one"
) -> argparse.ArgumentParser:
    """Subcommand `name` (its help from `COMMANDS`) that runs `func`: the model options (`model`: "one", "several" or
    None for none), then the options `add_arguments` adds."""
    p = sub.add_parser(name, help=COMMANDS[name])
    if model:
        add_model_args(p, several=model == "several")
    if add_arguments is not None:
        add_arguments(p)
    p.set_defaults(func=func)
    return p


def add_data_args(p: argparse.ArgumentParser, *, files: str = "the dataset files", download: str = "a dataset") -> None:
    """--data-dir (searched for `files`), --no-download (never downloads `download`), --batch-tokens."""
    p.add_argument("--data-dir", default=None, help=f"folder searched (recursively) for {files}; else $BIASLENS_DATA_DIR")
    p.add_argument("--no-download", action="store_true", help=f"never download {download}")
    p.add_argument("--batch-tokens", type=positive_int, default=None, help="rows x padded length per forward pass")


def add_run_args(p: argparse.ArgumentParser, *, chunks: str | None = None) -> None:
    """--batch-tokens, --chunk-<chunks> (what a resumable chunk counts: "pairs", "texts"; None: no such option),
    --cache-dir and --no-cache."""
    from biaslens.engine.runner import DEFAULT_CHUNK_SECONDS

    p.add_argument("--batch-tokens", type=positive_int, default=None, help="rows x padded length per forward pass")
    if chunks is not None:
        p.add_argument(
            f"--chunk-{chunks}",
            type=positive_int,
            default=None,
            help=f"{chunks} per resumable chunk (default: sized to about {DEFAULT_CHUNK_SECONDS:g} s of work on this device)",
        )
    p.add_argument("--cache-dir", default=None, help="result cache folder (default $BIASLENS_CACHE_DIR or ~/.cache/biaslens)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")


def add_progress_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress", action="store_true",
        help=f"progress bars even when stderr is not a terminal (otherwise a plain line every {LINE_INTERVAL:g} s there)",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------


def _amount(value: float, unit: str) -> str:
    if unit == "B":
        return f"{value / 1e6:,.1f} MB"
    return f"{math.floor(value + 1e-9):,}"  # whole pairs (steps, ...) done: an engine's fraction of a pair within a chunk is no pair


def _plural(unit: str) -> str:
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


class LineProgress:
    """The part of tqdm's interface the commands use, written as plain lines (start, every `interval` s, end)."""

    def __init__(
        self, total: float | None, unit: str, desc: str, *, interval: float = LINE_INTERVAL, file: TextIO | None = None,
        disable: bool = False, clock: Callable[[], float] = time.monotonic,
    ):  # fmt: skip
        self.total, self.unit, self.desc, self.interval, self.disable = total, unit, desc, interval, disable
        self.file = file
        self.clock = clock
        self.n: float = 0
        self.postfix = ""
        self.started = clock()
        self.last: float | None = None  # when the last line was written
        # (when, units done) at the first progress: time left is estimated from the rate since then, not since the bar
        # was made (setting up before the first unit, e.g. a lab corpus, would make the first estimate absurd).
        self.first: tuple[float, float] | None = None
        self.closed = False

    def _line(self, final: bool = False) -> str:
        now = self.clock()
        elapsed = now - self.started
        units = "" if self.unit == "B" else f" {_plural(self.unit)}"
        if self.total:
            done = f"{_amount(self.n, self.unit)}/{_amount(self.total, self.unit)}{units} ({100 * self.n / self.total:.0f}%)"
        else:
            done = f"{_amount(self.n, self.unit)}{units}"
        timing = f"{elapsed:.0f} s"
        if not final and self.total and self.first is not None and self.first[1] < self.n < self.total and now - self.first[0] >= 1:
            rate = (self.n - self.first[1]) / (now - self.first[0])
            timing += f", about {(self.total - self.n) / rate:.0f} s left"
        extra = f", {self.postfix}" if self.postfix else ""
        return f"{self.desc}: {'done, ' if final else ''}{done}, {timing}{extra}"

    def _write(self, line: str) -> None:
        print(line, file=self.file or sys.stderr, flush=True)

    def refresh(self) -> None:
        if self.disable or self.closed:
            return
        now = self.clock()
        if self.first is None and self.n > 0:
            self.first = (now, self.n)
        if self.last is None or now - self.last >= self.interval:
            self._write(self._line())
            self.last = now

    def update(self, n: float = 1) -> None:
        self.n += n
        self.refresh()

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())
        if refresh:
            self.refresh()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text
        if refresh:
            self.refresh()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not self.disable and self.last is not None:  # a line at the end of work that said it started
            self._write(self._line(final=True))

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_to(bar: Any) -> Callable[[float, float | None], None]:
    """An engine progress callback (`done, total`) that moves `bar`."""

    def update(done: float, total: float | None) -> None:
        if total and bar.total != total:
            bar.total = total
        bar.n = done if getattr(bar, "unit", "") == "B" else math.floor(done + 1e-9)  # whole pairs: never "0.3/200 pairs"
        bar.refresh()

    return update


@dataclass(frozen=True)
class Progress:
    """How a command shows progress on stderr: tqdm bars (`bars`) or plain periodic lines."""

    bars: bool
    interval: float = LINE_INTERVAL

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Progress":
        """Bars with --progress or when stderr is a terminal; lines otherwise."""
        return cls(bool(getattr(args, "progress", False)) or _is_terminal(sys.stderr))

    def bar(self, total: float | None, unit: str, desc: str, *, disable: bool = False) -> Any:
        if not self.bars:
            return LineProgress(total, unit, desc, interval=self.interval, disable=disable)
        from tqdm.auto import tqdm

        return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True, unit_scale=unit == "B", disable=disable)

    def download(self, desc: str) -> "DownloadBar":
        return DownloadBar(self, desc)

    @contextlib.contextmanager
    def pairs(self, total: int, desc: str, *, disable: bool = False) -> Iterator[Callable[[float, float | None], None]]:
        """A bar of `total` pairs, as an engine progress callback (`biaslens.analyses.pipeline.RunProgress`)."""
        with self.bar(total, "pair", desc, disable=disable) as bar:
            yield progress_to(bar)

    def stages(self, prefix: str) -> "StageBars":
        return StageBars(self, prefix)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class DownloadBar:
    """A byte progress bar that appears only if a download actually starts."""

    def __init__(self, progress: Progress, desc: str):
        self.progress = progress
        self.desc = desc
        self.bar: Any = None

    def __call__(self, done: int, total: int | None) -> None:
        if self.bar is None:
            self.bar = self.progress.bar(total, "B", f"downloading {self.desc}")
        progress_to(self.bar)(done, total)

    def __enter__(self) -> "DownloadBar":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


class StageBars:
    """One bar per stage (a `report` analysis); a new stage closes the previous bar. Call as `(stage, done, total)`."""

    def __init__(self, progress: Progress, prefix: str):
        self.progress = progress
        self.prefix = prefix
        self.stage: str | None = None
        self.bar: Any = None

    def __call__(self, stage: str, done: float, total: int) -> None:
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = self.progress.bar(total, "pair", f"{self.prefix} {stage}")
        progress_to(self.bar)(done, total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------


def load(spec: ModelSpec):
    """Load the model a spec names, saying so on stderr (a name that is no folder and no hub id is refused first)."""
    from biaslens.engine.models import check_model_name

    check_model_name(spec.model)
    print(f"Loading {spec.model} ...", file=sys.stderr)
    return spec.load()


def model_caveats(lm: Any, texts: Iterable[str] | None = None, *, label: str | None = None, warn_verdict: bool = True) -> dict[str, Any]:
    """The model's sanity verdict (and, given `texts`, how much of them it knows), warned about on stderr.

    `biaslens.analyses.sanity.caveats` computes them (the verdict is `model_verdict`, the one the app shows); a warning
    is printed when the model looks untrained or weak (unless `warn_verdict` is False: a caller that says it itself), or
    when the texts are mostly out of its vocabulary.
    Returns what a manifest records: {"sanity": {...}} and, with texts, {"vocabulary": {...}}.
    """
    from biaslens.analyses.sanity import caveats

    block, warnings = caveats(lm, texts, verdict_warning=warn_verdict)
    for warning in warnings:
        print(f"warning: {label or lm.name}: {warning}", file=sys.stderr)
    return block


def pair_texts(pairs: Iterable[Any]) -> Iterable[str]:
    """Both sentences of each pair, in order (for `model_caveats`)."""
    for p in pairs:
        yield p.sent_stereo
        yield p.sent_anti


def fmt(x: Any, digits: int = 2) -> str:
    """A number for a table, "n/a" for None and NaN."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


__all__ = [
    "COMMANDS",
    "EXIT_ERROR",
    "LINE_INTERVAL",
    "Parser",
    "DownloadBar",
    "LineProgress",
    "Progress",
    "StageBars",
    "add_compat_arg",
    "add_model_args",
    "add_progress_arg",
    "fmt",
    "load",
    "model_caveats",
    "pair_texts",
    "positive_int",
    "progress_to",
]
