"""`biaslens score`: any texts, token by token, into one tidy table (CSV, JSON lines or Parquet); words and texts too.

    biaslens score --model M --file texts.txt|.csv|.jsonl [--column text] --out tokens.csv|.jsonl|.parquet
                   [--words] [--sequences] [--prefix TEXT] [--suffix TEXT] [--variant V] [--first-token P]

Everything a user can get wrong is refused in one line before the model loads: the output file, the texts file
(empty lines, control characters such as NUL, unknown columns, over-long texts: with the model's tokenizer, read
without its weights), the options for the model's kind. Progress streams on stderr; the work goes through the
result cache in chunks (`biaslens.engine.runner.run_chunked`, as `evaluate`), so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from biaslens.engine.options import ModelSpec
from biaslens.engine.runner import DEFAULT_CHUNK_SECONDS
from biaslens.cli.common import COMMANDS, Progress, add_model_args, add_progress_arg, add_run_args, load, progress_to


def register(sub: Any) -> argparse.ArgumentParser:
    from biaslens.engine.text_scores import CAUSAL_VARIANT, DEFAULT_REDUCTION, MASKED_VARIANTS, REDUCTIONS

    p = sub.add_parser("score", help=COMMANDS["score"])
    add_model_args(p)
    p.add_argument("--file", required=True, help="the texts: a .txt file (one per line), or a .csv / .jsonl file (see --column)")
    p.add_argument("--column", default=None, help="the CSV column or JSON key holding the texts (default: text)")
    p.add_argument(
        "--out", dest="out_file", required=True, metavar="OUT", help="the token table: a .csv, .jsonl or .parquet file (one row per token)"
    )
    p.add_argument("--words", action="store_true", help="also write one row per word beside it: OUT's name + .words (e.g. tokens.words.csv)")
    p.add_argument("--sequences", action="store_true", help="also write one row per text beside it: OUT's name + .sequences")
    p.add_argument("--prefix", default=None, help="context before every text (scored given it; its own tokens are no rows)")
    p.add_argument("--suffix", default=None, help="context after every text (masked models only)")
    p.add_argument("--separator", default=" ", help="what joins the prefix, the text and the suffix (default: one space)")
    p.add_argument(
        "--variant",
        default=None,
        choices=[*MASKED_VARIANTS, CAUSAL_VARIANT],
        help="a masked model's reading: original (PLL, default), within_word_l2r or unmasked (AUL's); a causal model has one",
    )
    p.add_argument("--base", default="e", choices=["e", "2"], help="2 adds log p, surprisal and entropy in bits")
    p.add_argument("--surprisal", action="store_true", help="add a surprisal column (-log p)")
    p.add_argument(
        "--reduction", default=DEFAULT_REDUCTION, choices=list(REDUCTIONS), help="the score column of --sequences (default mean, as minicons)"
    )
    add_run_args(p, chunks="texts")
    add_progress_arg(p)
    p.set_defaults(func=cmd_score)
    return p


def beside(out: Path, what: str) -> Path:
    """The file written beside the token table: tokens.csv -> tokens.words.csv."""
    return out.with_name(f"{out.stem}.{what}{out.suffix}")


def cmd_score(args: argparse.Namespace) -> int:
    from biaslens.data.export import check_output_file, write_table
    from biaslens.data.sentences import check_sentence
    from biaslens.data.texts import read_texts
    from biaslens.engine.text_scores import check_token_lengths, check_variant, score
    from biaslens.errors import InputError, OutputError
    from biaslens.cli.evaluate import result_cache

    # Everything that can be refused is refused before the model loads.
    out = check_output_file(args.out_file)
    for what in ("words", "sequences"):
        if getattr(args, what) and beside(out, what).is_dir():  # (written beside OUT, in its folder: checked with it)
            raise OutputError(f"--{what} writes {beside(out, what)} beside --out, but that is a folder: move it, or choose another --out.")
    spec = ModelSpec.from_args(args)
    texts = read_texts(args.file, args.column)
    for k, text in enumerate(texts.texts):
        check_sentence(text, f"{args.file}: {texts.where(k).capitalize()}")
    for option, value in (("--prefix", args.prefix), ("--suffix", args.suffix)):
        if value is not None and value != "":
            check_sentence(value, f"{option}")
    kind = check_token_lengths(
        spec,
        texts.texts,
        where=lambda k: f"{args.file}: {texts.where(k)}",
        prefix=args.prefix or None,
        suffix=args.suffix or None,
        separator=args.separator,
        first_token=args.first_token,
    )
    if kind is not None:
        _check_kind(kind, args, InputError)
        check_variant(kind, args.variant)
    cache = None if args.no_cache else result_cache(args)
    if cache is not None:
        for warning in (w for w in (cache.notice, cache.warning) if w):
            print(f"warning: {warning}", file=sys.stderr)
    lm = load(spec)
    _check_kind(lm.kind, args, InputError)
    progress = Progress.from_args(args)
    with progress.bar(len(texts.texts), "text", "scoring") as bar:
        tokens = score(
            lm,
            list(texts.texts),
            variant=args.variant,
            prefix=args.prefix or None,
            suffix=args.suffix or None,
            separator=args.separator,
            base=args.base,
            surprisal=args.surprisal,
            first_token=args.first_token,
            batch_tokens=args.batch_tokens,
            progress=progress_to(bar),
            cache=cache,
            chunk_texts=args.chunk_texts,
            chunk_seconds=DEFAULT_CHUNK_SECONDS,
        )
    written = [(write_table(tokens, out), len(tokens), "tokens")]
    if args.words:
        words = tokens.words()
        written.append((write_table(words, beside(out, "words")), len(words), "words"))
    sequences = tokens.sequences(args.reduction)
    if args.sequences:
        written.append((write_table(sequences, beside(out, "sequences")), len(sequences), "texts"))
    scoring = tokens.scoring
    print(f"{lm.name}: {scoring.reading}", file=sys.stderr)
    print(summary(sequences))
    for path, rows, what in written:
        print(f"wrote {path} ({rows:,} rows: one per {what[:-1]})")
    return 0


def _check_kind(kind: str, args: argparse.Namespace, error: type[Exception]) -> None:
    if kind == "causal":
        if args.suffix:
            raise error("--suffix: a causal model reads left to right, so text after a text cannot change its scores; leave it out.")
        if args.variant not in (None, "causal"):
            raise error(f"--variant {args.variant}: a causal model reads each token given the tokens before it; leave --variant out.")
    elif args.first_token is not None:
        raise error("--first-token applies to causal models only; this is a masked model.")


def summary(sequences: Any, rows: int = 10) -> str:
    """The texts' scores as a short text table (the first `rows`)."""
    from biaslens.cli.common import fmt

    unit = sequences["unit"].iloc[0] if len(sequences) else "nats"
    reduction = sequences["reduction"].iloc[0] if len(sequences) else "mean"
    # One column per number: the score only where the reduction is not the sum or the mean already shown, and the
    # text's number headed "id" beside its text.
    score = reduction not in ("sum", "mean") or unit != "nats"
    head = f"{'id':>5}  {'tokens':>6}  {'log p sum':>10}  {'log p mean':>10}  " + (f"{reduction + ' (' + unit + ')':>14}  " if score else "")
    lines = [head + "text"]
    for row in sequences.head(rows).itertuples(index=False):
        shown = row.text if len(row.text) <= 60 else row.text[:57] + "..."
        numbers = f"{fmt(row.logprob_sum):>10}  {fmt(row.logprob_mean):>10}" + (f"  {fmt(row.score):>14}" if score else "")
        lines.append(f"{row.text_id:>5}  {row.scored_tokens:>6}  {numbers}  {shown}")
    if len(sequences) > rows:
        lines.append(f"... and {len(sequences) - rows:,} more texts")
    return "\n".join(lines)


__all__ = ["beside", "cmd_score", "register", "summary"]
