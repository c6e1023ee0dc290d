"""`biaslens models`: the model presets."""

from __future__ import annotations

import argparse
from typing import Any
from biaslens.cli.common import add_command


def register(sub: Any) -> argparse.ArgumentParser:
    return add_command(sub, "models", cmd_models, model=None)


def cmd_models(args: argparse.Namespace) -> int:
    from biaslens.engine.presets import DEFAULT_MODEL, PRESETS, VERIFIED_ARCHITECTURES

    width = max(map(len, PRESETS)) + 2
    for name, about in PRESETS.items():
        print(f"{name:<{width}}{about}{'  [default]' if name == DEFAULT_MODEL else ''}")
    print("\nAny Hugging Face masked or causal LM works too, by hub id or local folder (--model PATH); its kind comes from its config.")
    print("Architectures verified on tiny random models (docs/models.md):")
    for model_type, how in VERIFIED_ARCHITECTURES.items():
        print(f"  {model_type:<13}{how}")
    return 0


__all__ = ["cmd_models", "register"]
