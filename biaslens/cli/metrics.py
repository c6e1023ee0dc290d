"""`biaslens metrics`: the registry, with formula, direction and citation."""

from __future__ import annotations

import argparse
from typing import Any
from biaslens.cli.common import add_command


def register(sub: Any) -> argparse.ArgumentParser:
    return add_command(sub, "metrics", cmd_metrics, model=None)


def cmd_metrics(args: argparse.Namespace) -> int:
    from biaslens.engine.metrics import METRICS

    for m in METRICS.values():
        print(f"{m.key:<11}{m.name} ({m.long_name}): {m.summary}")
        print(f"{'':<11}formula: {m.formula}")
        print(f"{'':<11}ideal bias score {m.ideal:g}. {m.direction}")
        if m.note:
            print(f"{'':<11}note: {m.note}")
        print(f"{'':<11}cite: {m.citation}\n")
    return 0


__all__ = ["cmd_metrics", "register"]
