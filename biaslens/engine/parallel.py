"""Data-parallel evaluation with accelerate: `accelerate launch -m biaslens evaluate ...`.

Under `accelerate launch` with several processes (GPUs, CPU processes or nodes: any
launcher that sets WORLD_SIZE, RANK and the rendezvous address, e.g.
`accelerate launch --multi_gpu --num_processes 2`, `torchrun`, or MPI), each
process scores a contiguous share of a dataset's pairs (accelerate's
`split_between_processes`), the per-pair records are gathered on every process
(`gather_object`) and the main process writes `pairs.csv` and `summary.json`. With fixed
chunks (`--chunk-pairs N`) the share is of whole chunks, the same units a single process
scores, so every pair is computed in exactly the batches a single process would use and the
files are byte for byte a single process's (apart from the manifest's timing and process
count); with chunks sized by time (the default) they equal it up to float rounding. Without
a launcher, or with one process, nothing here imports accelerate or changes anything.
"""

from __future__ import annotations

import os
from typing import Any, Sequence, TypeVar

T = TypeVar("T")


def process_state(cpu: bool = False) -> Any | None:
    """accelerate's `PartialState` when launched with more than one process, else None.

    `cpu=True` (or no GPU on the machine) makes the processes talk over gloo on the CPU;
    else each process gets its own GPU. The first call decides; later calls return it.
    """
    if int(os.environ.get("WORLD_SIZE", "1") or 1) <= 1:
        return None
    import torch
    from accelerate import PartialState

    state = PartialState(cpu=cpu or not torch.cuda.is_available())
    return state if state.num_processes > 1 else None


def is_main_process(state: Any | None) -> bool:
    return state is None or bool(state.is_main_process)


def share(state: Any | None, items: Sequence[T]) -> list[T]:
    """This process's contiguous share of `items` (all of them in a single process)."""
    if state is None:
        return list(items)
    with state.split_between_processes(list(items)) as mine:
        return list(mine)


def gather(state: Any | None, value: T) -> list[T]:
    """`value` from every process, in process order (`[value]` in a single process)."""
    if state is None:
        return [value]
    from accelerate.utils import gather_object

    return gather_object([value])


def finish(state: Any | None) -> None:
    """Wait for every process, then take the process group down."""
    if state is not None:
        state.wait_for_everyone()
        state.destroy_process_group()


__all__ = ["finish", "gather", "is_main_process", "process_state", "share"]
