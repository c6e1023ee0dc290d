"""`biaslens zoo run | status | merge`: a plan of N models × M datasets as cluster jobs (`biaslens.zoo`).

    biaslens zoo run plan.toml --executor slurm --partition gpu --gpus-per-job 1 --time 2:00:00 --max-parallel 8
    biaslens zoo run plan.toml --executor local
    biaslens zoo run plan.toml --executor slurm --dry-run   (the jobs, their cells and sbatch scripts; nothing submitted)
    biaslens zoo status plan.toml
    biaslens zoo merge plan.toml --output zoo.csv      (or .json, .parquet)
    biaslens zoo import other-store --store zoo-store   (cells, datasets and models scored elsewhere)

`import` exits 0 when every cell was copied or already there, 1 when some were left out (a conflict or a damaged cell).
`run` exits 0 when every model's cells are in the store (or, with --no-wait, once the jobs are submitted), 1 when a
model failed (its one-line error is printed), 2 on a bad plan or argument or a job Slurm refuses, 128 + the signal's
number when it is stopped (130 for Ctrl-C: its jobs cancelled, or left running with --keep-jobs).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from biaslens.cli.common import COMMANDS, Parser, positive_int

EXIT_INCOMPLETE = 1


def _time(text: str) -> int:
    from biaslens.zoo.plan import TIME_EXPECTED, parse_time

    try:
        return parse_time(int(text) if text.strip().isdigit() else text)
    except (ValueError, TypeError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a time: give {TIME_EXPECTED}") from None


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number (0 or more), got {text!r}")
    return value


def register(sub: Any) -> argparse.ArgumentParser:
    zoo = sub.add_parser("zoo", help=COMMANDS["zoo"])
    zoo_sub = zoo.add_subparsers(dest="zoo_command", required=True, parser_class=Parser)

    run = zoo_sub.add_parser("run", help="score every cell of a plan that the results store lacks: one job per model")
    run.add_argument("plan", help="the zoo plan (a TOML file)")
    run.add_argument("--executor", choices=["local", "slurm"], default="local", help="slurm: one sbatch job array; local: jobs on this machine")
    run.add_argument("--store", default=None, help="the results store folder (default: the plan's `store`)")
    run.add_argument("--partition", default=None, help="Slurm partition (default: the plan's [slurm] partition, else the cluster's default)")
    run.add_argument("--gpus-per-job", type=_whole, default=None, help="GPUs per job (Slurm default 1; local default: every GPU)")
    run.add_argument("--cpus-per-job", type=positive_int, default=None, help="CPUs per job (Slurm)")
    run.add_argument("--mem-gb", type=float, default=None, help="memory per job in GB (Slurm)")
    run.add_argument(
        "--time", type=_time, default=None, help="a job's time limit: minutes or HH:MM:SS (default 24 h); a job that reaches it is requeued"
    )
    run.add_argument("--max-parallel", type=positive_int, default=None, help="jobs running at once (Slurm: the array's throttle; local default 1)")
    run.add_argument("--models-per-job", type=positive_int, default=None, help="small models run one after the other in one job (default 1)")
    run.add_argument("--retries", type=_whole, default=None, help="times a failed or killed job is submitted again (default: the plan's, else 2)")
    run.add_argument("--no-wait", action="store_true", help="submit the jobs and return (follow them with `zoo status`)")
    run.add_argument("--dry-run", action="store_true", help="print the jobs, their cells and the sbatch script each would get; submit nothing")
    run.add_argument(
        "--keep-jobs",
        action="store_true",
        help="when this command is stopped (Ctrl-C, SIGTERM, a hang-up), leave its jobs running (default: cancel them); the next run adopts them",
    )
    run.set_defaults(func=cmd_zoo_run)

    status = zoo_sub.add_parser("status", help="each model of a plan: cells in the store, running, failed (with why)")
    status.add_argument("plan", help="the zoo plan (a TOML file)")
    status.add_argument("--store", default=None, help="the results store folder (default: the plan's `store`)")
    status.set_defaults(func=cmd_zoo_status)

    merge = zoo_sub.add_parser("merge", help="one table of models x datasets x metrics with 95%% intervals (CSV, JSON or Parquet)")
    merge.add_argument("plan", nargs="?", default=None, help="the zoo plan: its cells (default: every cell in --store)")
    merge.add_argument("--store", default=None, help="the results store folder (default: the plan's `store`; required without a plan)")
    merge.add_argument("--output", default=None, help="write the table here: .csv, .json or .parquet (default: print it)")
    merge.add_argument("--format", choices=["csv", "json", "parquet"], default=None, help="the file's format when its suffix does not say")
    merge.add_argument("--wide", action="store_true", help="one row per model, a column per dataset and metric (and its interval)")
    merge.set_defaults(func=cmd_zoo_merge)

    into = zoo_sub.add_parser("import", help="copy into a results store the cells, datasets and models of another (scored elsewhere)")
    into.add_argument("source", help="the results store to copy from (a second cluster's, a laptop's)")
    into.add_argument("plan", nargs="?", default=None, help="the zoo plan whose store receives them (or --store)")
    into.add_argument("--store", default=None, help="the results store to copy into (made if absent; default: the plan's `store`)")
    into.set_defaults(func=cmd_zoo_import)
    return zoo


def _plan(args: Any):
    from biaslens.zoo.plan import load_plan

    plan = load_plan(args.plan)
    return plan.with_store(args.store) if args.store else plan


def _err(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # the terminal is gone (a hang-up)
        pass


def cmd_zoo_run(args: Any) -> int:
    from biaslens.zoo.executors import DriverStopped, ExecutorOptions, dry_run, run_plan

    plan = _plan(args)
    options = ExecutorOptions.from_plan(
        plan,
        args.executor,
        partition=args.partition,
        gpus_per_job=args.gpus_per_job,
        cpus_per_job=args.cpus_per_job,
        mem_gb=args.mem_gb,
        time_min=args.time,
        max_parallel=args.max_parallel,
        models_per_job=args.models_per_job,
    )
    if args.dry_run:
        for line in dry_run(plan, options).lines():
            print(line)
        return 0
    try:
        report = run_plan(
            plan,
            executor=args.executor,
            options=options,
            retries=args.retries,
            wait=not args.no_wait,
            log=_err,
            on_stop="keep" if args.keep_jobs else "cancel",
        )
    except DriverStopped as stopped:
        _err(str(stopped))
        return 128 + stopped.signum
    width = max(len(m.label) for m in report.models)
    for m in report.models:
        detail = f": {m.error}" if m.error else ""
        counted = [f"{n} {what}" for n, what in ((m.scored, "scored"), (m.unavailable, "unavailable")) if n]
        counts = f" ({', '.join(counted)})" if counted else ""
        print(f"{m.label:<{width}}  {m.state}{counts}{detail}")
    if report.run_id:
        print(f"run {report.run_id} · store {report.store}")
    return 0 if report.ok else EXIT_INCOMPLETE


def cmd_zoo_status(args: Any) -> int:
    from biaslens.zoo.status import plan_status

    status = plan_status(_plan(args))
    for line in status.lines():
        print(line)
    return 0


def cmd_zoo_merge(args: Any) -> int:
    from biaslens.errors import InputError
    from biaslens.zoo.merge import merged_table, wide_table, write_table
    from biaslens.zoo.store import ResultsStore

    if args.plan is None and args.store is None:
        raise InputError("Name a plan, or the results store with --store.")
    plan = _plan(args) if args.plan else None
    store = ResultsStore(plan.store if plan is not None else args.store)
    table = merged_table(store, plan)
    if args.wide:
        table = wide_table(table)
    if args.output:
        path = write_table(table, args.output, args.format)
        print(f"{len(table):,} rows written to {path}")
    elif args.format:
        raise InputError("--format needs --output (a file to write).")
    else:
        print(_text_table(table, wide=args.wide))
    for note in table.attrs.get("notes", []):  # datasets told apart, damaged cells left out, models that look untrained
        _err(note)
    return 0


def cmd_zoo_import(args: Any) -> int:
    from biaslens.errors import InputError
    from biaslens.zoo.importing import import_store

    if args.plan is None and args.store is None:
        raise InputError("Name the store to import into: a plan (its store), or --store DIR.")
    target = _plan(args).store if args.plan else args.store
    report = import_store(args.source, target)
    for line in report.lines():
        print(line)
    return 0 if report.complete else EXIT_INCOMPLETE


def _text_table(table: Any, *, wide: bool) -> str:
    from biaslens.analyses.sanity import VERDICT_LABELS

    import pandas as pd

    from biaslens.zoo.choicecells import choice_statistics

    # a pair metric's bias score is a percentage (one place); a BBQ or Winogender statistic a fraction (three places)
    if wide:
        fraction = {column: (lambda x: "—" if pd.isna(x) else f"{x:.3f}") for column in table.attrs.get("fractions", [])}
        return table.to_string(index=False, float_format=lambda x: f"{x:.1f}", formatters=fraction, na_rep="—")
    if table.empty:
        return "No cells."
    statistics = set(choice_statistics())
    shown = table.assign(
        score=[
            "—" if s != "done" else f"{b:5.3f} [{lo:.3f}, {hi:.3f}]" if m in statistics else f"{b:5.1f} [{lo:.1f}, {hi:.1f}]"
            for s, m, b, lo, hi in zip(table["status"], table["metric"], table["bias_score"], table["ci_low"], table["ci_high"])
        ],
        sanity=[VERDICT_LABELS.get(s, s) if isinstance(s, str) else "" for s in table["sanity"]],
    )
    columns = ["model", "sanity", "dataset", "metric", "score", "n", "status"]
    for optional in ("convention", "precision", "compat"):
        if table[optional].nunique(dropna=True) > 1:
            columns.insert(4, optional)
    return shown[columns].to_string(index=False, na_rep="")
