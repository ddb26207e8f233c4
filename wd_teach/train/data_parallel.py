"""Data parallelism's pieces that a rank uses: one GPU per process, the gradients, the first
weights and each iteration's metrics shared over the ranks through torch.distributed.

The plain Trainer's several-GPU run (wd_teach.scale.distributed, lesson 09) and the Lightning
module (wd_teach.train.lightning, lesson 08) both use them, so they live here, in the training
layer: lesson 08 then imports nothing from lesson 09. wd_teach.scale.distributed explains the
whole picture (its docstring) and starts the processes.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from wd_teach.errors import MissingPieceError, TrainError

if TYPE_CHECKING:
    from wd_teach.train.trainer import Trainer

#: Metrics that add up over the ranks; every other one is averaged.
SUMMED = ("env_steps", "steps_per_second")


# -- before the process group: how many processes, and each one's device ----------------------


def check_world_size(world_size, gpu: bool) -> int:
    """`world_size` processes can run here: at least one, and with `gpu`, no more than the
    GPUs this machine has (one GPU per process)."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise TrainError(f"world_size (--gpus) is the number of processes, one per GPU: a "
                         f"whole number of at least 1, got {world_size!r}.")
    if gpu:
        have = torch.cuda.device_count()
        if world_size > have:
            fewer = (f"Ask for at most {have} (--gpus {have}; one GPU is the plain run)" if have
                     else "Leave out --gpus to train on this CPU")
            raise MissingPieceError(
                f"asked for {world_size} GPUs, this machine has {have}. {fewer}, or run on a "
                f"machine with {world_size} GPUs. To try data parallelism without GPUs, "
                "train_data_parallel(..., gpu=False) runs the processes on the CPU.")
    return world_size


def use_device(local_rank: int, gpu: bool, local_world_size: int = 1) -> None:
    """Step 1 of a process: its GPU, `cuda:local_rank`, current before anything touches the
    GPU; on the CPU, its share of the cores (unless OMP_NUM_THREADS says otherwise)."""
    if gpu:
        torch.cuda.set_device(local_rank)
        torch.zeros(1, device="cuda")  # the context is now current: PyCUDA and Numba take it
    elif "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world_size))


# -- the pieces a rank uses --------------------------------------------------------------------


def average_gradients(parameters) -> None:
    """The learners' `reduce` hook: every gradient replaced by its mean over the ranks.

    The gradients are laid end to end in one flat buffer, so that the GPUs talk once per
    step instead of once per weight matrix; the all-reduce sums the buffers of all ranks
    (NCCL and gloo both sum; not every backend averages), and each rank divides by the
    world size. Every rank gets the same bits back, so the weights stay identical.
    Parameters without a gradient are left out: the same ones on every rank, since every
    rank runs the same network and the same loss."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    flat = _flatten_dense_tensors(grads)
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    for grad, averaged in zip(grads, _unflatten_dense_tensors(flat, grads), strict=True):
        grad.copy_(averaged)


def broadcast_weights(trainer: Trainer, src: int = 0) -> None:
    """Every rank takes rank `src`'s weights: the policies and whatever other networks a
    learner holds (DDPG's target networks). In place, one broadcast per dtype."""
    tensors = []
    for learner in trainer.learners.values():
        for module in vars(learner).values():
            if isinstance(module, torch.nn.Module):
                tensors.extend(module.state_dict().values())
    # dict.fromkeys keeps the first-seen order, the same on every rank (a set's is not).
    for dtype in dict.fromkeys(t.dtype for t in tensors):
        same = [t for t in tensors if t.dtype == dtype]
        flat = _flatten_dense_tensors(same)
        dist.broadcast(flat, src)
        for tensor, received in zip(same, _unflatten_dense_tensors(flat, same), strict=True):
            tensor.copy_(received)


def make_data_parallel(trainer: Trainer) -> Trainer:
    """Join a built trainer to the process group: rank 0's weights on every rank, and
    every learner's gradients averaged over the ranks before each optimiser step. The
    optimisers are fresh and alike, so with the same gradients they stay alike."""
    broadcast_weights(trainer)
    for learner in trainer.learners.values():
        learner.reduce = average_gradients
    return trainer


def average_metrics(row: dict, device: torch.device | str | None = None) -> dict:
    """One iteration's metrics over every rank: env steps and steps per second summed,
    the rest averaged over the ranks where they are a number (a return is NaN on a rank
    where no episode ended). One all-reduce of a [2, metrics] tensor (sums, counts), on
    `device` (NCCL needs it on the GPU). Every rank gets the same row back."""
    names = list(row)
    values = torch.tensor([float(row[k]) for k in names], dtype=torch.float64, device=device)
    finite = torch.isfinite(values)
    both = torch.stack([torch.where(finite, values, torch.zeros_like(values)), finite.double()])
    dist.all_reduce(both)
    sums, counts = both.tolist()
    out = {}
    for name, total, count in zip(names, sums, counts, strict=True):
        value = total if name in SUMMED else (total / count if count else math.nan)
        out[name] = round(value) if isinstance(row[name], int) else value
    return out


def average_row(trainer: Trainer, row: dict) -> None:
    """The train() callback: the row (the history's last) averaged over the ranks."""
    row.update(average_metrics(row, trainer.device))
