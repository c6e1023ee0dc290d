"""Command line: `python -m biaslens <command> ...` (also installed as `biaslens`).

Commands: evaluate (score a dataset, the contract scripts and the app rely on),
report (the paper's tables and figure for one or more models), shuffle (one sentence shuffled),
inspect (one pair, token by token), metrics (the registry), models (the presets),
datasets (where the datasets are, or fetch them). Bad arguments and bad input exit
non-zero with one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from pathlib import Path
from typing import Callable, Sequence

from .errors import BiaslensError, OutputError

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _add_model_args(p: argparse.ArgumentParser, *, several: bool = False) -> None:
    from .models import DEFAULT_MODEL

    if several:  # --model A B, or --model A --model B; None = the default model
        p.add_argument("--model", nargs="+", action="extend", default=None, help=f"hub ids or local folders (default {DEFAULT_MODEL})")
    else:
        p.add_argument("--model", default=DEFAULT_MODEL, help=f"hub id or local folder (default {DEFAULT_MODEL})")
    p.add_argument("--revision", default=None, help="hub revision (branch, tag or commit)")
    p.add_argument("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N, mps")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"], help="half precision needs a GPU")
    p.add_argument("--device-map", default=None, choices=["auto"], help="auto: spread a model too large for one GPU over every GPU (then the CPU)")
    p.add_argument("--allow-pickle", action="store_true", help="allow pickle (.bin) weights, which can run code: only for sources you trust")


def _add_compat_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--compat",
        default="default",
        choices=["default", "kaneko2022"],
        help="default follows the papers' equations; kaneko2022 reproduces the released reference code",
    )


def build_parser() -> argparse.ArgumentParser:
    from .metrics import METRICS, PAPER_METRICS

    parser = _Parser(prog="biaslens", description="Token-level social bias in masked language models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ev = sub.add_parser("evaluate", help="score a dataset; writes pairs.csv and summary.json")
    _add_model_args(ev)
    ev.add_argument("--dataset", required=True, help="crows-pairs, stereoset, crows-pairs-revised, crows-pairs-revised-210, crows-pairs-fr, crows-pairs-ja, crows-pairs-ru, winoqueer, "
                    "or a path to a dataset / custom pairs CSV")
    ev.add_argument("--metrics", default=",".join(PAPER_METRICS), help=f"comma-separated, from: {' '.join(METRICS)}")
    ev.add_argument("--out", required=True, help="output folder")
    _add_compat_arg(ev)
    ev.add_argument("--data-dir", default=None, help="folder searched (recursively) for the dataset files; else $BIASLENS_DATA_DIR")
    ev.add_argument("--limit", type=_positive_int, default=None, help="score only the first N pairs")
    ev.add_argument("--sample", type=_positive_int, default=None, help="score a seeded random sample of N pairs")
    ev.add_argument("--seed", type=int, default=0, help="seed of --sample")
    ev.add_argument("--batch-tokens", type=_positive_int, default=None, help="rows x padded length per forward pass")
    ev.add_argument(
        "--chunk-pairs", type=_positive_int, default=None, help="pairs per resumable chunk (default 128), the unit shared out under accelerate launch"
    )
    ev.add_argument("--cache-dir", default=None, help="result cache folder (default $BIASLENS_CACHE_DIR or ~/.cache/biaslens)")
    ev.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    ev.add_argument("--no-download", action="store_true", help="never download a dataset")
    from .cli_field import add_compare_command, add_evaluate_options

    add_evaluate_options(ev)
    ev.set_defaults(func=cmd_evaluate)
    add_compare_command(sub, _add_model_args, _add_compat_arg, _positive_int)

    ins = sub.add_parser("inspect", help="score one sentence pair, token by token")
    _add_model_args(ins)
    ins.add_argument("stereo", help="the stereotypical (more biased) sentence")
    ins.add_argument("anti", help="the anti-stereotypical (less biased) sentence")
    ins.add_argument("--metrics", default=",".join(PAPER_METRICS))
    _add_compat_arg(ins)
    ins.add_argument("--json", action="store_true", help="print JSON instead of tables")
    ins.set_defaults(func=cmd_inspect)

    met = sub.add_parser("metrics", help="list the metrics with formula, direction and citation")
    met.set_defaults(func=cmd_metrics)

    mod = sub.add_parser("models", help="list the model presets")
    mod.set_defaults(func=cmd_models)

    ds = sub.add_parser("datasets", help="show where the datasets are; --fetch downloads missing ones")
    ds.add_argument("--data-dir", default=None)
    ds.add_argument("--fetch", action="store_true", help="download missing datasets into the cache")
    ds.set_defaults(func=cmd_datasets)

    from .lab import add_lab_arguments, cmd_lab_evaluate, cmd_lab_train

    lab = sub.add_parser("lab", help="bias lab: train a small masked LM with a planted bias and see which metrics detect it")
    lab_sub = lab.add_subparsers(dest="lab_command", required=True, parser_class=_Parser)
    add_lab_arguments(lab_sub.add_parser("train", help="train (or find in the cache) the lab model of a scenario")).set_defaults(func=cmd_lab_train)
    lev = add_lab_arguments(lab_sub.add_parser("evaluate", help="score the held-out pairs with every metric against the planted truth"))
    lev.add_argument("--model", default=None, help="a lab model folder (default: the one the options describe, trained if needed)")
    lev.add_argument("--metrics", default=",".join(METRICS), help=f"comma-separated, from: {' '.join(METRICS)}")
    lev.add_argument("--out", default=None, help="write pairs.csv and summary.json here (one subfolder per scenario with --preset all)")
    lev.set_defaults(func=cmd_lab_evaluate)
    __import__("biaslens.sweep_cli", fromlist=["add_sweep_parser"]).add_sweep_parser(lab_sub)  # `lab sweep`

    from .kurita import add_kurita_arguments, cmd_kurita

    ku = sub.add_parser("kurita", help="Kurita et al. (2019): template bias scores, attribute-list shares, WEAT-style tests")
    _add_model_args(ku)
    add_kurita_arguments(ku).set_defaults(func=cmd_kurita)

    from .report import add_report_arguments, cmd_report

    rep = sub.add_parser("report", help="reproduce Kaneko & Bollegala (2022): Tables 1-5 and Figure 1 as CSV, Markdown and HTML")
    _add_model_args(rep, several=True)
    add_report_arguments(rep).set_defaults(func=cmd_report)

    from .shuffle import add_shuffle_arguments, cmd_shuffle

    shu = sub.add_parser("shuffle", help="one sentence's tokens before and after shuffling (Kaneko & Bollegala 2022, Table 4)")
    _add_model_args(shu)
    add_shuffle_arguments(shu).set_defaults(func=cmd_shuffle)
    return parser


# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------


def _tqdm(total: float | None, unit: str, desc: str, disable: bool = False):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True, unit_scale=unit == "B", disable=disable)


def _progress_to(bar) -> Callable[[float, float | None], None]:
    def update(done: float, total: float | None) -> None:
        if total and bar.total != total:
            bar.total = total
        bar.n = round(done, 2)
        bar.refresh()

    return update


class _DownloadBar:
    """A byte progress bar that appears only if a download actually starts."""

    def __init__(self, desc: str):
        self.desc = desc
        self.bar = None

    def __call__(self, done: int, total: int | None) -> None:
        if self.bar is None:
            self.bar = _tqdm(total, "B", f"downloading {self.desc}")
        _progress_to(self.bar)(done, total)

    def __enter__(self) -> "_DownloadBar":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def _load(args: argparse.Namespace):
    from .models import load_model

    print(f"Loading {args.model} ...", file=sys.stderr)
    return load_model(
        args.model,
        device=args.device,
        dtype=args.dtype,
        revision=args.revision,
        allow_pickle=args.allow_pickle,
        device_map=getattr(args, "device_map", None),
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    from . import parallel
    from .cache import ResultCache
    from .datasets import load_dataset
    from .evaluation import evaluate
    from .metrics import check_compat, parse_metrics

    metrics = parse_metrics(args.metrics)
    check_compat(args.compat)
    # Under `accelerate launch` (several processes) each process scores a share of the
    # pairs on its own device; the main process downloads first and writes the files.
    state = parallel.process_state(cpu=args.device == "cpu")
    main = parallel.is_main_process(state)
    if state is not None and args.device == "auto":
        args.device = str(state.device)
    with state.main_process_first() if state is not None else contextlib.nullcontext():
        with _DownloadBar(args.dataset) as bar:
            dataset = load_dataset(args.dataset, data_dir=args.data_dir, download=not args.no_download, progress=bar)
        lm = _load(args)
    for note in dataset.notes if main else ():
        print(f"note: {note}", file=sys.stderr)
    cache, said = None, []
    if not args.no_cache:
        cache = ResultCache(Path(args.cache_dir) / "results.sqlite" if args.cache_dir else None)
        said = [w for w in (cache.notice, cache.warning) if w]  # said now, not only after the run
        for warning in said:
            print(f"warning: {warning}", file=sys.stderr)
    n = len(dataset)
    with _tqdm(min(n, args.limit or n, args.sample or n), "pair", f"{dataset.name} {','.join(metrics)}", disable=not main) as bar:
        result = evaluate(
            lm,
            dataset,
            metrics,
            compat=args.compat,
            limit=args.limit,
            sample=args.sample,
            seed=args.seed,
            cache=cache,
            batch_tokens=args.batch_tokens,
            **({"chunk_pairs": args.chunk_pairs} if args.chunk_pairs else {}),
            progress=_progress_to(bar),
        )
    if not main:
        parallel.finish(state)
        return 0
    from .cli_field import after_evaluate

    result = after_evaluate(args, lm, dataset, result, cache, metrics)
    try:
        pairs_path, summary_path = result.save(args.out)
    except OutputError as exc:
        kept = (f"the scores are kept in the result cache ({cache.path}): run the same command with a writable --out to write them "
                "without scoring again") if cache is not None and cache.warning is None else "the scores were not cached (--no-cache or cache off)"
        raise OutputError(f"{str(exc).rstrip('.')}; {kept}.") from None
    if result.cached:
        print(f"{result.cached} of {len(result.pairs) * len(metrics)} pair scores came from the result cache", file=sys.stderr)
    for warning in result.warnings:
        if warning not in said:
            print(f"warning: {warning}", file=sys.stderr)
    print(_summary_table(result.summary))
    print(f"wrote {pairs_path} and {summary_path}")
    parallel.finish(state)
    return 0


def _fmt(x: float, digits: int = 2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _summary_table(summary: dict) -> str:
    from .metrics import METRICS

    lines = [f"{'metric':<11}{'bias score':>11}  {'95% CI (Wilson)':<17}{'N':>6}{'ties':>6}{'undecid.':>9}{'token acc.':>11}"]
    for key, block in summary["metrics"].items():
        ci = f"[{_fmt(block['ci_low'])}, {_fmt(block['ci_high'])}]"
        lines.append(
            f"{METRICS[key].name:<11}{_fmt(block['bias_score']):>11}  {ci:<17}{block['n']:>6}{block['ties']:>6}"
            f"{block['undecidable']:>9}{_fmt(block['token_accuracy']):>11}"
        )
    return "\n".join(lines)


def cmd_inspect(args: argparse.Namespace) -> int:
    import json

    from .evaluation import inspect_pair

    lm = _load(args)
    result = inspect_pair(lm, args.stereo, args.anti, metrics=args.metrics, compat=args.compat)
    scores = result.summary_frame()
    if args.json:
        out = {
            "scores": scores.to_dict(orient="records"),
            "stereo_tokens": result.stereo.token_frame().drop(columns=["top_logprobs"]).to_dict(orient="records"),
            "anti_tokens": result.anti.token_frame().drop(columns=["top_logprobs"]).to_dict(orient="records"),
            "manifest": result.manifest,
        }
        print(json.dumps(out, indent=2, default=lambda v: None if v != v else str(v)))
        return 0
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.max_rows", 600):
        for label, detail in (("stereotypical", result.stereo), ("anti-stereotypical", result.anti)):
            frame = detail.token_frame()
            frame = frame.assign(top=[" ".join(t[:3]) for t in frame["top_tokens"]])
            cols = ["position", "token", "modified", "logprob", "rank", "attention", "aula_contribution", "cps_logprob", "top"]
            print(f"\n{label}: {detail.encoding.text}")
            print(frame[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        print()
        print(scores.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    from .metrics import METRICS

    for m in METRICS.values():
        print(f"{m.key:<11}{m.name} ({m.long_name}): {m.summary}")
        print(f"{'':<11}formula: {m.formula}")
        print(f"{'':<11}ideal bias score {m.ideal:g}. {m.direction}")
        if m.note:
            print(f"{'':<11}note: {m.note}")
        print(f"{'':<11}cite: {m.citation}\n")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from .models import DEFAULT_MODEL, PRESETS

    for name, about in PRESETS.items():
        print(f"{name:<26}{about}{'  [default]' if name == DEFAULT_MODEL else ''}")
    print("\nAny Hugging Face masked-LM hub id or local folder works too (--model PATH).")
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    from .datasets import DATASETS, load_dataset, locate_dataset

    for name, source in DATASETS.items():
        path = locate_dataset(name, data_dir=args.data_dir)
        if path is None and args.fetch:
            with _DownloadBar(name) as bar:
                path = load_dataset(name, data_dir=args.data_dir, progress=bar).path
        print(f"{name:<24}{path if path else 'not found locally (run with --fetch, or pass --data-dir)'}")
        print(f"{'':<24}source: {source.url} ({source.license})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if isinstance(getattr(args, "out", None), str):  # refuse an unwritable output folder before any work
            from .export import check_output_dir

            check_output_dir(args.out)
        return args.func(args)
    except BiaslensError as exc:
        print(f"biaslens {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(
            f"biaslens {args.command}: interrupted. Finished chunks are cached: run the same command again to resume.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
