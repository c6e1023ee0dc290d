"""`biaslens kurita`: Kurita et al. (2019) template bias scores, attribute-list shares and WEAT-style tests (`biaslens.kurita`)."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.errors import InputError
from biaslens.data.export import atomic_write, check_output_dir, safe_csv
from biaslens.kurita import (
    ALPHA,
    KURITA_CATEGORIES,
    TemplateScores,
    kurita_weat_spec,
    leaning,
    parse_target_pairs,
    parse_templates,
    published_list_key,
    read_word_list,
    save_weat,
    score_templates,
    shares_table,
    weat_table,
    weat_test,
)
from biaslens.engine.options import ModelSpec
from biaslens.engine.stats import MAX_PERMUTATIONS
from biaslens.cli.common import Progress, add_command, add_data_args, add_progress_arg, load, model_caveats, bounded_int, progress_to, seed_int


def register(sub: Any) -> argparse.ArgumentParser:
    return add_command(sub, "kurita", cmd_kurita, add_kurita_arguments)


def add_kurita_arguments(p: Any) -> Any:
    """Options of `biaslens kurita` besides the model ones (argparse); returns the parser."""
    p.add_argument(
        "--templates", nargs="+", default=["[T] is [A]."],
        help="templates with [T] and [A]; 'TEMPLATE | t1, t2' limits one to some targets (default: '[T] is [A].')",
    )  # fmt: skip
    p.add_argument("--targets", nargs="+", default=["he/she"], help="target pairs first/second, e.g. he/she men/women (default he/she)")
    p.add_argument("--attributes", nargs="+", default=[], metavar="FILE", help="attribute lists, one word or phrase a line; one result per file")
    p.add_argument("--lowercase", action="store_true", help="lower-case the attribute lists (Kurita et al. did)")
    p.add_argument(
        "--weat", nargs="*", default=None, choices=list(KURITA_CATEGORIES), metavar="TEST",
        help=f"run the paper's WEAT-style tests (Table 3): {', '.join(KURITA_CATEGORIES)}; no name = all five",
    )  # fmt: skip
    p.add_argument("--permute", default="attributes", choices=["attributes", "targets"], help="what the WEAT permutation test re-partitions")
    p.add_argument(
        "--permutations",
        type=bounded_int(1, MAX_PERMUTATIONS, "a number of permutations"),
        default=10000,
        help=f"random partitions when exact enumeration is too large (default 10000, at most {MAX_PERMUTATIONS:,})",
    )
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the permutation test")
    add_data_args(p, files="weat*.jsonl", download="the WEAT files")
    p.add_argument("--out", required=True, help="output folder")
    add_progress_arg(p)
    return p


def format_share(name: str, scores: TemplateScores, published: float | None, note: str = "") -> str:
    share, pairs = scores.share(), scores.pairs
    first = "/".join(dict.fromkeys(p.first for p in pairs))
    second = "/".join(dict.fromkeys(p.second for p in pairs))
    line = (
        f"{name}: {share.n} attributes, {share.percent:.1f}% more associated with {first} than {second} "
        f"(95% CI {share.ci_low:.1f}-{share.ci_high:.1f}; {share.second} with {second}, {share.ties} ties)"
    )
    if published is not None:
        line += f"; Kurita et al. (bert-base-uncased): {published:.1f}%"
    elif note:
        line += f"; Kurita et al.'s share: {note}"
    toward_first, toward_second = leaning(scores.attribute_table(), 5)
    for side, sign, rows, total in ((first, ">", toward_first, share.first), (second, "<", toward_second, share.second)):
        listed = ", ".join(f"{a} {b:+.3g}" for a, b in zip(rows["attribute"], rows["bias_score"]))
        line += f"\n  toward {side} (bias score {sign} 0): " + (f"{len(rows)} of {total}, strongest first: {listed}" if total else "none")
    flagged = scores.multi_piece_targets()
    if flagged:
        line += "\n  multi-piece targets, scored by their first piece: " + ", ".join(f"{t} ({p})" for t, p in flagged.items())
    multi = scores.multi_piece_attributes()
    if multi:
        line += f"\n  {len(multi)} multi-piece attributes (all pieces masked for p_prior)"
    return line


def format_weat(table: pd.DataFrame) -> str:
    lines = [f"{'category':<40}{'d':>8}{'p':>9}{'p 2-sided':>11}  {'':<2}{'published':>10}  p from"]
    notes = []
    for row in table.itertuples():
        star = "*" if row.significant else ""
        published = f"{row.published_log_prob:>10.4f}" if not math.isnan(row.published_log_prob) else f"{'n/c':>10}"
        if math.isnan(row.published_log_prob):
            notes.append(f"  n/c {row.category}: {row.published}")
        lines.append(f"{row.category:<40}{row.effect_size:>8.3f}{row.p_value:>9.4f}{row.p_two_sided:>11.4f}  {star:<2}{published}  {row.p_method}")
    lines.append(
        f"p: one-sided, Pr[S_i > S] over re-partitions (Kurita et al.); p 2-sided: Pr[|S_i| >= |S|]. * one-sided p < {ALPHA}. "
        "published: Kurita et al. (2019) Table 3, log probability bias score, bert-base-uncased."
    )
    return "\n".join(lines + notes)


def cmd_kurita(args: Any) -> int:
    """Template scores for each attribute list, and/or the WEAT-style tests; writes CSV and JSON into --out."""
    from biaslens.data.weat import load_weat

    if not args.attributes and args.weat is None:
        raise InputError("Nothing to do: give --attributes FILE (template scores) and/or --weat (the paper's WEAT-style tests).")
    spec = ModelSpec.from_args(args)
    progress = Progress.from_args(args)
    templates = parse_templates(args.templates)
    pairs = parse_target_pairs(args.targets)
    lists = {Path(f).stem: read_word_list(f, lowercase=args.lowercase) for f in args.attributes}
    specs = {}
    weat_keys = (args.weat or list(KURITA_CATEGORIES)) if args.weat is not None else []
    scores_files = [f"{name}_{file}" for name in lists for file in ("scores.csv", "attributes.csv", "summary.json")]
    check_output_dir(  # a folder where a result file goes: refused before the model loads, not after scoring
        args.out, files=[*scores_files, *(["shares.csv"] if lists else []), *(("weat.csv", "weat_units.csv", "weat.json") if weat_keys else ())]
    )
    for key in weat_keys:
        name = KURITA_CATEGORIES[key].weat
        with progress.download(f"{name}.jsonl") as bar:
            specs[key] = kurita_weat_spec(key, load_weat(name, data_dir=args.data_dir, download=not args.no_download, progress=bar))
    lm = load(spec)
    # Every word the model is asked about: targets, attribute lists, WEAT word sets.
    words = [t for p in pairs for t in (p.first, p.second)] + [w for wl in lists.values() for w in wl.words]
    words += [w for s in specs.values() for t in s.pairs for w in (t.first, t.second)]
    words += [w for s in specs.values() for ws in (s.attributes_1, s.attributes_2) for w in ws.words]
    caveats = model_caveats(lm, words)
    out = Path(args.out)
    scored = {}
    for name, word_list in lists.items():
        for note in word_list.notes:
            print(f"note: {name}: {note}", file=sys.stderr)
        with progress.bar(None, "query", f"kurita {name}") as bar:
            scores = score_templates(lm, templates, pairs, word_list.words, batch_tokens=args.batch_tokens, progress=progress_to(bar))
        scored[name] = replace(scores, manifest={**scores.manifest, **caveats})
        scored[name].save(out, prefix=f"{name}_")
    if scored:
        published = {name: published_list_key(name) for name in scored}
        shares = shares_table(scored, published)
        atomic_write(out / "shares.csv", safe_csv(shares))
        for (name, scores), ref, note in zip(scored.items(), shares["published_share"], shares["published"]):
            print(format_share(name, scores, None if math.isnan(ref) else ref, note))
    if specs:
        results = []
        for key, weat_spec in specs.items():
            with progress.bar(None, "query", f"weat {key}") as bar:
                results.append(
                    weat_test(lm, weat_spec, permute=args.permute, n_permutations=args.permutations, seed=args.seed,
                              batch_tokens=args.batch_tokens, progress=progress_to(bar))
                )  # fmt: skip
        save_weat(results, out, {**lm.manifest(method="kurita2019-weat", permute=args.permute, seed=args.seed), **caveats})
        print(format_weat(weat_table(results)))
    print(f"wrote {out}/")
    return 0


__all__ = ["add_kurita_arguments", "cmd_kurita", "format_share", "format_weat", "register"]
