"""`biaslens lab train` and `biaslens lab evaluate`: the bias lab (`biaslens.lab`) from the command line."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from biaslens.data.export import check_output_dir
from biaslens.lab import EXPECTED_TEXT, LabModel, LabReport, LabSettings
from biaslens.lab import evaluate_lab, find_lab_model, heldout_pairs, load_lab_model, loss_window, train_lab_model
from biaslens.cli.common import COMMANDS, Parser, Progress, progress_to
from biaslens.cli.lab_options import add_lab_arguments, settings_from_args


def register(sub: Any) -> argparse.ArgumentParser:
    from biaslens.engine.metrics import MASKED_METRICS

    lab = sub.add_parser("lab", help=COMMANDS["lab"])
    lab_sub = lab.add_subparsers(dest="lab_command", required=True, parser_class=Parser)
    add_lab_arguments(lab_sub.add_parser("train", help="train (or find in the cache) the lab model of a scenario")).set_defaults(func=cmd_lab_train)
    lev = add_lab_arguments(lab_sub.add_parser("evaluate", help="score the held-out pairs with every metric against the planted truth"))
    lev.add_argument("--model", default=None, help="a lab model folder (default: the one the options describe, trained if needed)")
    lev.add_argument(
        "--metrics", default=None, help=f"comma-separated (default: every metric of the model's kind; masked: {' '.join(MASKED_METRICS)})"
    )
    lev.add_argument("--out", default=None, help="write pairs.csv and summary.json here (one subfolder per scenario with --preset all)")
    lev.set_defaults(func=cmd_lab_evaluate)
    from biaslens.cli.lab_sweep import add_sweep_parser

    add_sweep_parser(lab_sub)
    return lab


def train_with_bar(settings: LabSettings, models_dir: str | None, progress: Progress) -> LabModel:
    """The lab model of `settings`: found in the store, or trained with a progress bar."""
    found = find_lab_model(settings, models_dir)
    if found is not None:
        print(f"{settings.scenario}: already trained, {found.path}", file=sys.stderr)
        return found
    with progress.bar(settings.steps, "step", f"training {settings.scenario}") as bar:

        def update(step: int, _total: int, loss: float) -> None:
            # The same quantity as the summary's final loss (`smoothed_loss`), which it equals at the last step.
            bar.set_postfix_str(f"mean loss of the last {loss_window(settings.steps)} steps {loss:.3f}", refresh=False)
            bar.update(step - bar.n)

        return train_lab_model(settings, cache_dir=models_dir, progress=update)


def cmd_lab_train(args: Any) -> int:
    progress = Progress.from_args(args)
    for settings in settings_from_args(args):
        model = train_with_bar(settings, args.models_dir, progress)
        t = model.training
        print(f"{settings.scenario}: {model.path}")
        print(
            f"  association {settings.association:g}, frequency ratio {settings.frequency_ratio:g}, seed {settings.seed}; "
            f"{t.get('parameters', 0):,} parameters, vocabulary {t.get('vocab_size')}, final loss {t.get('final_loss', math.nan):.3f} "
            f"(mean of the last {loss_window(settings.steps)} steps), trained in {t.get('seconds', math.nan):.0f} s"
        )
    print("Next: biaslens lab evaluate (same options), or any command with --model <folder above>.")
    return 0


def format_report(report: LabReport) -> str:
    """A report as text: the planted truth, then one line per metric."""
    from biaslens.data.export import text_table

    s = report.settings
    frame = report.frame()
    lines = [
        f"{s.scenario}: association {s.association:g}, frequency ratio {s.frequency_ratio:g}, seed {s.seed}; "
        f"{len(report.pairs)} held-out pairs; planted truth: bias score {EXPECTED_TEXT[s.expected]}",
        f"  model: {report.model.path}",
    ]
    rows = [
        [
            row["metric"],
            f"{row['bias_score']:.1f}",
            f"[{row['ci_low']:.1f}, {row['ci_high']:.1f}]",
            row["verdict"],
            f"{row['group_a_preference']:.1f}",
            f"{row['bias_score_x']:.1f} / {row['bias_score_y']:.1f}",
        ]
        for row in frame.to_dict(orient="records")
    ]
    header = ["metric", "bias score", "95% CI", "verdict", "prefers A", f"{s.attributes_x_label} / {s.attributes_y_label}"]
    lines.append(text_table(header, rows, indent="  "))
    return "\n".join(lines)


def cmd_lab_evaluate(args: Any) -> int:
    from biaslens.engine.metrics import parse_metrics

    metrics = parse_metrics(args.metrics) if args.metrics else None
    progress = Progress.from_args(args)
    settings = [] if args.model else settings_from_args(args)
    if args.out:  # a folder where a result file goes: refused before any training or scoring
        outs = [Path(args.out) / s.scenario for s in settings] if len(settings) > 1 else [Path(args.out)]
        for out in outs:
            check_output_dir(out, files=("pairs.csv", "summary.json"))
    if args.model:
        models = [load_lab_model(args.model)]
    else:
        models = [train_with_bar(s, args.models_dir, progress) for s in settings]
    for i, model in enumerate(models):
        with progress.bar(len(heldout_pairs(model.settings)), "pair", f"scoring {model.settings.scenario}") as bar:
            report = evaluate_lab(model, metrics=metrics, progress=progress_to(bar))
        print(format_report(report))
        if args.out:
            out = Path(args.out) / model.settings.scenario if len(models) > 1 else Path(args.out)
            pairs_path, summary_path = report.save(out)
            print(f"  wrote {pairs_path} and {summary_path}")
        if i == len(models) - 1:
            first = report.pairs[0].pair
            print(f'\nOne pair, token by token: biaslens inspect --model {model.path} "{first.sent_stereo}" "{first.sent_anti}"')
    print(
        "\nprefers A = % of pairs where the metric scores the sentence naming the group-A word higher (50 = no preference;"
        " group A is the frequent one when the frequency ratio is above 1). Pairs are balanced, so such a preference"
        " alone leaves the bias score at 50 but splits it between the two attribute sets."
    )
    return 0


__all__ = ["cmd_lab_evaluate", "cmd_lab_train", "format_report", "register", "train_with_bar"]
