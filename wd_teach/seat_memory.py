"""A seat's share of a GPU that a room of learners shares.

In a workshop room many seats train on one GPU at once (docker/jupyterhub/). Nothing in
the card stops one seat's `--envs auto`, or a cell that asks for 10,000 envs, from taking
the memory every other seat needs. So the room gives each seat a limit, in the environment
of its server:

    WD_TEACH_GPU_MEMORY_GB=4      this seat may use 4 GiB (2**30 bytes) of GPU memory

and wd-teach honours it in three places:

- torch's allocator is capped at it (`torch.cuda.set_per_process_memory_fraction`), once
  per device, when the first data store is made on the GPU (`apply`);
- the size checks of the data store, the env wrapper and the trainer count only what is
  left of it (`free_bytes`), and refuse a size over it before any GPU work starts, naming
  the limit and what to do (`require_room`);
- `--envs auto` fits its runs inside what is left of it (wd_teach.scale.autoscale).

Unset (a laptop, Colab, a GPU of one's own), the whole card is there, as before.
"""

from __future__ import annotations

import math
import os

import torch

from wd_teach.errors import ConfigError, TooLargeError

ENV_VAR = "WD_TEACH_GPU_MEMORY_GB"
GIB = 2**30

_applied: set[torch.device] = set()


def limit_bytes(environ=None) -> int | None:
    """This seat's GPU memory limit in bytes, from WD_TEACH_GPU_MEMORY_GB; None when unset."""
    text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not text:
        return None
    try:
        gib = float(text)
    except ValueError:
        gib = math.nan
    if not (math.isfinite(gib) and gib > 0):
        raise ConfigError(f"{ENV_VAR}={text!r}: a seat's GPU memory limit is a number of GiB "
                          "above 0, e.g. 4 or 2.5. The room's hub sets it for each seat; unset "
                          "it for no limit.")
    return int(gib * GIB)


def describe(limit: int) -> str:
    """The limit in words, with where it comes from."""
    return f"this seat's GPU memory limit, {limit / GIB:.2f} GiB ({ENV_VAR}, set by the room)"


def apply(device: torch.device | str) -> None:
    """Cap torch's allocator on `device` at this seat's limit, once per device (a later
    call does nothing). On a CPU, or without a limit, it does nothing."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:  # "cuda": the current card, by number
        device = torch.device("cuda", torch.cuda.current_device())
    if device.type != "cuda" or device in _applied:
        return
    limit = limit_bytes()
    if limit is not None:
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, limit / total), device)
    _applied.add(device)


def free_bytes(device: torch.device | str, *, card: tuple[int, int] | None = None,
               reserved: int | None = None) -> tuple[int, int]:
    """(free, total) bytes of GPU memory this seat may still use on `device`: the card's,
    or, under a limit, what torch has not yet reserved of the limit (and no more than the
    card has free). `card` (free, total) and `reserved` stand in for the device's own
    numbers, so the sums can be checked without a GPU."""
    device = torch.device(device)
    card_free, card_total = card if card is not None else torch.cuda.mem_get_info(device)
    limit = limit_bytes()
    if limit is None:
        return card_free, card_total
    if reserved is None:
        reserved = torch.cuda.memory_reserved(device)
    total = min(limit, card_total)
    return max(0, min(card_free, total - reserved)), total


def require_room(need: int, what: str, device: torch.device | str, *, fewer: str,
                 card: tuple[int, int] | None = None, reserved: int | None = None) -> None:
    """Refuse `need` bytes for `what` on `device` when they are more than this seat has free,
    in words that name the limit (if there is one) and what to do; `fewer` says how to ask
    for less. On a CPU it checks nothing."""
    device = torch.device(device)
    if device.type != "cuda":
        return
    free, total = free_bytes(device, card=card, reserved=reserved)
    if need <= free:
        return
    limit = limit_bytes()
    if limit is None:
        raise TooLargeError(f"{what} need {need / GIB:.2f} GiB on the GPU, but only "
                            f"{free / GIB:.2f} of {total / GIB:.2f} GiB is free. {fewer}")
    raise TooLargeError(f"{what} need {need / GIB:.2f} GiB on the GPU, more than the "
                        f"{free / GIB:.2f} GiB left of {describe(limit)}. {fewer} "
                        "`--envs auto` finds how many fit within the limit; a larger limit is "
                        "the teacher's to give.")
