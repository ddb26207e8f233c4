"""How fast the sampler draws, next to torch.multinomial and torch.distributions.Categorical.

One function, `bench_sampler`, that the notebook (03_sampler), the benchmark script
(bench/sampler.py) and the tests all call. It times with wd_teach.timing (CUDA events on a
GPU) after a warm-up and reports the median of many calls. On a CPU it still runs, at small
size, and says what the numbers are: torch on the CPU, and Numba on the CUDA simulator (every CUDA
thread a Python thread: a check that the code runs, not a speed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from wd_teach.data import DataStore
from wd_teach.device import default_device, discover
from wd_teach.errors import SamplerError
from wd_teach.lessons.sizes import lesson_sizes
from wd_teach.sampler.sampler import Sampler
from wd_teach.timing import time_calls

MULTINOMIAL = "torch.multinomial"
CATEGORICAL = "torch.distributions.Categorical"


@dataclass(frozen=True)
class Timing:
    """One row of the table: the median time of one call that draws `draws` actions."""

    name: str
    device: str
    median_ms: float
    draws: int
    note: str = ""

    @property
    def draws_per_second(self) -> float:
        return self.draws / (self.median_ms / 1e3)

    def as_dict(self) -> dict:
        return {**asdict(self), "draws_per_second": self.draws_per_second}


def bench_sampler(num_envs: int | None = None, num_agents: int | None = None,
                  num_actions: int | None = None, *, backends: Sequence[str] | None = None,
                  repeats: int | None = None, warmup: int | None = None,
                  seed: int = 0) -> list[Timing]:
    """Time one draw per agent for num_envs x num_agents agents over num_actions actions.

    Rows: each backend drawing from probabilities already in the store (a policy that wrote
    into `sampler.probs`), the same with the copy of the policy's tensor into the store
    (`sample(probs)`), then torch.multinomial and Categorical on the same probabilities.
    Sizes default to `lesson_sizes()`; backends to every one that runs here.
    """
    sizes = lesson_sizes()
    num_envs = num_envs or sizes.num_envs
    num_agents = num_agents or sizes.num_agents
    num_actions = num_actions or sizes.num_actions
    device = default_device()
    on_gpu = device.type == "cuda"
    repeats = repeats or (50 if on_gpu else 3)
    warmup = warmup if warmup is not None else (5 if on_gpu else 1)
    backends = tuple(backends) if backends is not None else discover().backends
    for backend in backends:
        if backend not in discover().backends:
            raise SamplerError(f"backend {backend!r} cannot run here; these can: "
                               f"{', '.join(discover().backends) or 'none'}.")

    generator = torch.Generator(device=device).manual_seed(seed)
    logits = torch.randn((num_envs, num_agents, num_actions), generator=generator,
                         device=device)
    probs = torch.softmax(logits, dim=-1)
    del logits
    draws = num_envs * num_agents
    where = torch.cuda.get_device_name(device) if on_gpu else "CPU"
    simulated = "CUDA simulator: Python threads, not a speed"

    def row(name: str, fn: Callable[[], object], note: str = "") -> Timing:
        median = float(np.median(time_calls(fn, repeats, warmup, device).per_call)) * 1e3
        return Timing(name, where, median, draws, note)

    timings = []
    for backend in backends:
        store = DataStore(num_envs, num_agents, device=device)
        sampler = Sampler(store, num_actions, backend=backend, seed=seed, checked=False)
        sampler.probs.copy_(probs)
        note = simulated if not on_gpu else ""  # kernels off a GPU: the simulator's
        timings.append(row(f"wd_teach {backend}: sample()", sampler.sample, note))
        timings.append(row(f"wd_teach {backend}: sample(probs), with the copy",
                           lambda sampler=sampler: sampler.sample(probs), note))
        del sampler, store
    flat = probs.view(-1, num_actions)
    timings.append(row(MULTINOMIAL, lambda: torch.multinomial(flat, 1, replacement=True)))
    timings.append(row(CATEGORICAL,
                       lambda: torch.distributions.Categorical(probs=probs).sample()))
    return timings


def speedups(timings: Sequence[Timing], against: str = MULTINOMIAL) -> dict[str, float]:
    """How many times faster than `against` each row is."""
    base = next((t.median_ms for t in timings if t.name == against), None)
    return {t.name: (base / t.median_ms if base else float("nan")) for t in timings}


def format_table(timings: Sequence[Timing]) -> str:
    """The timings as a text table, with the speed-up over torch.multinomial."""
    if not timings:
        return "(no timings)"
    faster = speedups(timings)
    head = ("sampler", "median ms", "draws/s", f"x {MULTINOMIAL}")
    cells = [(t.name, f"{t.median_ms:.3f}", f"{t.draws_per_second:.3g}",
              f"{faster[t.name]:.2f}") for t in timings]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(4)]
    lines = [f"{timings[0].draws:,} draws per call on {timings[0].device}", ""]
    for c in [head, *cells]:
        lines.append(f"{c[0]:<{widths[0]}}  {c[1]:>{widths[1]}}  {c[2]:>{widths[2]}}  "
                     f"{c[3]:>{widths[3]}}")
    lines.insert(3, "-" * len(lines[2]))
    notes = sorted({t.note for t in timings if t.note})
    lines += [""] + [f"note: {n}" for n in notes] if notes else []
    return "\n".join(lines)
