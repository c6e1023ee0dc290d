"""The bias lab's command-line options, shared by `biaslens lab train`, `lab evaluate` (`cli/lab.py`) and `lab sweep`
(`cli/lab_sweep.py`): `add_lab_arguments` adds them to a parser, `settings_from_args` reads them back as `LabSettings`."""

from __future__ import annotations

from typing import Any

from biaslens.cli.common import add_progress_arg, bounded_float, seed_int
from biaslens.errors import InputError
from biaslens.lab import DEFAULT_LAB_SCENARIO, SCENARIOS, LabSettings, scenario_settings


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


def add_corpus_and_model_arguments(p: Any) -> None:
    """The words, templates and labels of the lab corpus and the lab model's size and recipe (argparse): the options
    that `lab train`, `lab evaluate` and `lab sweep` share."""
    d = LabSettings()
    p.add_argument("--group-a", default=",".join(d.group_a), help="comma-separated words of group A")
    p.add_argument("--group-b", default=",".join(d.group_b), help="comma-separated words of group B, as many as group A")
    p.add_argument("--attributes-x", default=",".join(d.attributes_x), help="comma-separated attributes associated with group A")
    p.add_argument("--attributes-y", default=",".join(d.attributes_y), help="comma-separated attributes associated with group B")
    p.add_argument(
        "--template", action="append", default=None, help="a template with {name} and {attribute}; repeat for several (default: six built in)"
    )
    p.add_argument("--labels", default=None, help="four comma-separated names for group A, group B, attributes X, attributes Y")
    p.add_argument("--hidden-size", type=int, default=d.hidden_size)
    p.add_argument("--layers", type=int, default=d.num_layers)
    p.add_argument("--heads", type=int, default=d.num_heads)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--learning-rate", type=bounded_float(0.0, 1.0, "a learning rate"), default=d.learning_rate)
    p.add_argument("--kind", default=d.kind, choices=["masked", "causal"], help="the model trained: a small BERT (masked) or a small GPT-2 (causal)")


def add_lab_arguments(p: Any) -> Any:
    """The knobs of `biaslens lab train` and `lab evaluate` (argparse); returns the parser."""
    d = LabSettings()
    p.add_argument(
        "--preset",
        default=DEFAULT_LAB_SCENARIO,
        choices=[*SCENARIOS, "all"],
        help="what is planted: an association, a frequency imbalance, both or neither; all = the four in turn",
    )
    p.add_argument(
        "--association",
        type=bounded_float(0.0, 1.0, "an association strength"),
        default=None,
        help="strength of the planted association, P(attributes X | group A) = P(Y | B): 0.5 = none, 1 = total (default: the preset's)",
    )
    p.add_argument(
        "--frequency-ratio",
        type=bounded_float(1.0, 100.0, "a frequency ratio"),
        default=None,
        help="strength of the frequency imbalance: each group-A word appears k times as often as a group-B word (default: the preset's)",
    )
    p.add_argument("--corpus-size", type=int, default=d.corpus_size, help=f"training sentences (default {d.corpus_size})")
    p.add_argument("--steps", type=int, default=d.steps, help=f"training steps (default {d.steps})")
    p.add_argument("--seed", type=seed_int, default=d.seed, help="seed of the corpus, the initial weights and the batches")
    add_corpus_and_model_arguments(p)
    p.add_argument(
        "--models-dir", default=None, help="folder of the lab models (default <cache>/lab, cache = $BIASLENS_CACHE_DIR or ~/.cache/biaslens)"
    )
    add_progress_arg(p)
    return p


#: The `LabSettings` fields set by the options of their own name (`--corpus-size` sets `corpus_size`; `--layers` and
#: `--heads` set `num_layers` and `num_heads`).
SETTINGS_OPTIONS = ("corpus_size", "steps", "seed", "hidden_size", "batch_size", "learning_rate")


def settings_from_args(args: Any) -> list[LabSettings]:
    """The settings the command-line arguments describe: one, or four for --preset all."""
    labels = _words(args.labels) if args.labels else None
    if labels is not None and len(labels) != 4:
        raise InputError(f"--labels needs four comma-separated names (group A, group B, attributes X, attributes Y), got {len(labels)}.")
    base = LabSettings(
        group_a=_words(args.group_a),
        group_b=_words(args.group_b),
        attributes_x=_words(args.attributes_x),
        attributes_y=_words(args.attributes_y),
        templates=tuple(args.template) if args.template else LabSettings.templates,
        **(dict(zip(("group_a_label", "group_b_label", "attributes_x_label", "attributes_y_label"), labels)) if labels else {}),
        **{name: getattr(args, name) for name in SETTINGS_OPTIONS},
        num_layers=args.layers,
        num_heads=args.heads,
        kind=getattr(args, "kind", "masked"),
    )
    names = list(SCENARIOS) if args.preset == "all" else [args.preset]
    if args.preset != "all":  # a strength of what the preset does not plant would be ignored: refused instead
        preset = SCENARIOS[args.preset]
        if args.frequency_ratio is not None and preset.frequency_ratio == 1.0:
            raise InputError(
                f"--frequency-ratio does not apply to --preset {args.preset}, which plants no frequency imbalance: "
                "use --preset frequency or both, or leave it out."
            )
        if args.association is not None and preset.association == 0.5:
            raise InputError(
                f"--association does not apply to --preset {args.preset}, which plants no association: "
                "use --preset association or both, or leave it out."
            )
    return [scenario_settings(name, base, association=args.association, frequency_ratio=args.frequency_ratio) for name in names]


__all__ = ["SETTINGS_OPTIONS", "add_lab_arguments", "settings_from_args"]
