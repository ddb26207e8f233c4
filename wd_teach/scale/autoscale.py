"""How many environments fit on this GPU? Measure, draw a line, jump, measure again.

A training run's GPU memory is a fixed part (the weights, the optimiser's state, cuBLAS's
workspace, the pools of the CUDA graphs) and a part that grows with every environment (its
state, its share of the rollout buffer `[steps, envs, agents, ...]`, the activations of the
update). So, nearly,

    bytes(envs) = a + b * envs

Two small runs give two points, so a and b, and the most envs with a + b * envs below a
budget: `fraction` (0.8) of the GPU's free memory, the rest left for what the allocator
rounds up and what lives outside it. The line is only nearly right: the update works in
parts of `trainer.chunk_samples` samples, so past some size its activations stop growing
and the true curve bends below the line. So the answer is measured as well: a run at the
size the line gives is a new point, a line through the two largest points gives the next
size, and this stops when the size moves by less than 5% (the secant method). A run that
does not fit (torch's OutOfMemoryError, or the wrapper's own check, TooLargeError) halves
the step: the next try is half way back to the largest size that fitted. What comes back
was run, within the budget.

    fit = fit_num_envs("tag_continuous", sets=["trainer.steps=50"])
    fit.num_envs, fit.bytes_per_env, fit.batch_size
    wd-teach train tag_continuous --envs auto

Without a GPU it refuses, and says why: on a CPU the limit is time, not memory (an
iteration at a size that fills a laptop's memory takes minutes), so there one chooses
--envs by how long an iteration may take. The fitting itself runs anywhere: pass `measure`
and `free_memory` (the tests and notebook 09 pass a pretend GPU).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from wd_teach import seat_memory
from wd_teach.device import gpu_available
from wd_teach.errors import BenchError, ConfigError, MissingPieceError, TooLargeError
from wd_teach.train.algorithms import ALGORITHMS
from wd_teach.train.config import TrainConfig, load_config, make_env, resolve_agents
from wd_teach.train.policy import agent_groups

#: Of the free memory, the share a run may fill.
DEFAULT_FRACTION = 0.8
#: The two sizes measured first.
PROBE_ENVS = (8, 32)
#: Runs after the first two, at most; and the move in size that ends the search.
MAX_ROUNDS = 8
CLOSE_ENOUGH = 0.05
#: Iterations a measurement runs: the first runs plainly, the second records the CUDA
#: graphs (their memory pools are part of what a run needs).
MEASURED_ITERATIONS = 2

NO_GPU = ("auto-scaling measures GPU memory, and this machine has no GPU. On the CPU the "
          "limit is time, not memory: choose the number of envs yourself (--envs N; the CPU "
          "config's default is small), or run on a GPU machine.")


#: Why a run of the search had the size it had (Probe.reason).
WHY = {"probe": "a first probe",
       "line": "where the line through the two largest runs meets the budget",
       "cap": "max_envs: the line would go further",
       "between": "half way to a size that was over the budget",
       "back": "half way back after a run that did not fit",
       "grow": "eight times the largest run: memory has not grown yet between the two largest"}


@dataclass(frozen=True)
class Probe:
    """One run of the search, in the order run: its size, its peak bytes (None: it did not
    fit), why it had that size (a key of WHY), and the line (a, b) of bytes = a + b * envs
    the search stood on when it chose the size (None for the first probes)."""

    num_envs: int
    peak_bytes: int | None
    reason: str
    line: tuple[float, float] | None = None


@dataclass(frozen=True)
class Fit:
    """What `fit_num_envs` found, and every run of its search (`probes`, in order)."""

    num_envs: int
    base_bytes: float
    bytes_per_env: float
    budget_bytes: int
    free_bytes: int
    fraction: float
    steps: int
    num_agents: int
    probes: tuple[Probe, ...]

    @property
    def measured(self) -> tuple[tuple[int, int | None], ...]:
        """(envs, peak bytes) of every run, in order, with None where it did not fit."""
        return tuple((p.num_envs, p.peak_bytes) for p in self.probes)

    @property
    def batch_size(self) -> int:
        """Samples in one rollout: steps x envs x agents."""
        return self.steps * self.num_envs * self.num_agents

    def describe(self) -> str:
        gib = 2**30
        return (f"{self.num_envs:,} envs fit: {self.base_bytes / gib:.2f} GiB + "
                f"{self.bytes_per_env / 2**20:.2f} MiB per env, within {self.fraction:g} of "
                f"the {self.free_bytes / gib:.1f} GiB free ({self.budget_bytes / gib:.1f} GiB); "
                f"a rollout is {self.steps} steps x {self.num_envs:,} envs x "
                f"{self.num_agents} agents = {self.batch_size:,} samples.")


def line_through(points: dict[int, int]) -> tuple[float, float]:
    """(a, b) of the line bytes = a + b * envs through the two largest sizes measured."""
    (n1, m1), (n2, m2) = sorted(points.items())[-2:]
    slope = (m2 - m1) / (n2 - n1)
    return m1 - slope * n1, slope


def no_growth(b: float) -> BenchError:
    return BenchError(f"memory did not grow with the number of envs ({b:.0f} bytes per env "
                      "between the two largest runs), so no line can say how many fit. "
                      "Measure at larger sizes (probe_envs).")


def envs_within(a: float, b: float, budget: float) -> int:
    """The most envs with a + b * envs <= budget (0 when not even one fits)."""
    if b <= 0:
        raise no_growth(b)
    return max(int(math.floor((budget - a) / b)), 0)


def fit_num_envs(config="tag_continuous", *, overrides: dict | None = None, sets=(),
                 gpu: bool | None = None, fraction: float = DEFAULT_FRACTION,
                 probe_envs: tuple[int, int] = PROBE_ENVS, max_envs: int | None = None,
                 measure: Callable[[int], int] | None = None,
                 free_memory: Callable[[], int] | None = None,
                 log: Callable[[str], object] | None = None) -> Fit:
    """The most envs of `config` (an env name, a YAML path, a dict: as Trainer takes) whose
    training fits `fraction` of the GPU's free memory, measured as the module says.

    `measure(envs)` -> peak bytes of a run at that size (it raises torch's OutOfMemoryError
    or TooLargeError when it does not fit); `free_memory()` -> free bytes. Both default to
    this GPU's; pass them to fit a pretend GPU. `log`: a function for progress lines.
    """
    _check(fraction, probe_envs, max_envs)
    config = load_config(config, overrides=overrides, sets=sets, gpu=gpu)  # checked first
    if measure is None or free_memory is None:
        if not gpu_available():
            raise MissingPieceError(NO_GPU)
        measure = measure or gpu_measure(config, gpu)
        free_memory = free_memory or free_gpu_memory
    free = int(free_memory())
    search = _Search(measure, int(fraction * free), valid_sizes(config), log)
    for num_envs in probe_envs:
        if search.valid(num_envs) != num_envs:
            raise BenchError(f"{num_envs} envs (probe_envs) do not suit "
                             f"{config.algorithm_name}'s batch sizes: choose other probes.")
        if search.run(num_envs, "probe") is None:
            raise BenchError(f"{num_envs} envs do not fit on this GPU ({free / 2**30:.2f} GiB "
                             "free): make the run smaller (fewer agents, trainer.steps, "
                             "smaller policies) or free the GPU.")
    best = search.climb(max_envs)
    if best == 0:
        smallest = min(search.points)
        raise BenchError(f"even {smallest} envs need {search.points[smallest] / 2**30:.2f} GiB, "
                         f"more than {fraction:g} of the {free / 2**30:.2f} GiB free. Make the "
                         "run smaller, free the GPU, or raise fraction.")
    a, b = line_through(search.points)
    if b <= 0 and best != max_envs:  # grown as far as the rounds go, and never more memory
        raise no_growth(b)
    return Fit(num_envs=best, base_bytes=a, bytes_per_env=b, budget_bytes=search.budget,
               free_bytes=free, fraction=fraction, steps=config.trainer.steps,
               num_agents=make_env(config.env).num_agents, probes=tuple(search.probes))


class _Search:
    """The runs of one fit: what each measured, and the secant steps between them."""

    def __init__(self, measure, budget: int, valid, log):
        self.measure, self.budget, self.valid = measure, budget, valid
        self.log = log or (lambda text: None)
        self.points: dict[int, int] = {}  # envs -> peak bytes, of the runs that fitted
        self.probes: list[Probe] = []

    def run(self, num_envs: int, reason: str, line=None) -> int | None:
        """Peak bytes at num_envs, or None where it does not fit; recorded as a Probe."""
        try:
            peak = int(self.measure(num_envs))
        except Exception as err:
            if not out_of_memory(err):
                raise
            peak = None
        self.probes.append(Probe(num_envs, peak, reason, line))
        self.log(f"{num_envs:,} envs ({WHY[reason]}): " + (
            "does not fit" if peak is None else f"{peak / 2**30:.3f} GiB"))
        if peak is not None:
            self.points[num_envs] = peak
        return peak

    def climb(self, max_envs: int | None) -> int:
        """From the probes up to the most envs measured within the budget (0: none)."""
        best = max((n for n, peak in self.points.items() if peak <= self.budget), default=0)
        ceiling = None  # the most envs still worth trying, once a size was too big
        candidate, reason = self.next_size(best, ceiling, max_envs)
        for _ in range(MAX_ROUNDS):
            if candidate <= best * (1 + CLOSE_ENOUGH):
                break
            peak = self.run(candidate, reason, line_through(self.points))
            if peak is None or peak > self.budget:  # memory grows with envs: fewer from now on
                ceiling = candidate - 1
            if peak is None:  # it did not fit at all: half way back to the largest that did
                candidate, reason = self.valid((best + candidate) // 2), "back"
                continue
            if peak <= self.budget:
                best = candidate
            candidate, reason = self.next_size(best, ceiling, max_envs)
        return best

    def next_size(self, best: int, ceiling: int | None, max_envs: int | None
                  ) -> tuple[int, str]:
        """Where the line through the two largest points meets the budget (at most
        max_envs); where that is past the ceiling (a size found too big), half way between
        the best so far and it. With the reason, a key of WHY."""
        a, b = line_through(self.points)
        if b <= 0:  # small runs can all round to the same allocator blocks: go bigger
            size, reason = best * 8, "grow"
        else:
            size, reason = envs_within(a, b, self.budget), "line"
        if max_envs is not None and size > max_envs:
            size, reason = max_envs, "cap"
        if ceiling is not None and size > ceiling:
            size, reason = (best + ceiling + 1) // 2, "between"
        return (self.valid(size) if size >= 1 else 0), reason


def _check(fraction, probe_envs, max_envs) -> None:
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise BenchError(f"fraction is the share of free GPU memory to fill, between 0 and 1; "
                         f"got {fraction!r}.")
    probes = tuple(probe_envs)
    if (len(probes) != 2 or not all(isinstance(n, int) and n >= 1 for n in probes)
            or probes[0] >= probes[1]):
        raise BenchError(f"probe_envs are two numbers of envs, the smaller first, e.g. (8, 32); "
                         f"got {probe_envs!r}.")
    if max_envs is not None and not (isinstance(max_envs, int) and max_envs >= probes[1]):
        raise BenchError(f"max_envs must be a whole number of envs, at least the larger "
                         f"probe ({probes[1]}); got {max_envs!r}.")


def valid_sizes(config: TrainConfig) -> Callable[[int], int]:
    """A function that gives the largest num_envs <= n that every group's algorithm accepts
    (PPO's minibatches must divide the samples), by the checks Trainer makes first, on the
    host."""
    env = make_env(config.env)
    mapping = {name: resolve_agents(p.agents, env, name) for name, p in config.policies.items()}
    groups = agent_groups(mapping, env.num_agents)

    def accepted(num_envs: int) -> bool:
        try:
            for group in groups:
                name, algorithm = config.algorithm_of(group.name)  # its own, or the run's
                ALGORITHMS[name].check(algorithm, config.trainer.steps * num_envs * group.size,
                                       group.name, steps=config.trainer.steps)
        except ConfigError:
            return False
        return True

    def valid(n: int) -> int:
        return next((m for m in range(n, 0, -1) if accepted(m)), 0)

    return valid


def out_of_memory(err: BaseException) -> bool:
    """Whether `err` says "too big": torch's OutOfMemoryError, the wrapper's TooLargeError,
    or the CUDA driver's CUDA_ERROR_OUT_OF_MEMORY as PyCUDA and Numba raise it."""
    if isinstance(err, (torch.cuda.OutOfMemoryError, TooLargeError)):
        return True
    text = str(err).lower()
    return "out of memory" in text or "out_of_memory" in text


def release_gpu_memory() -> None:
    """Hand back what the last run's tensors held: what is gone is garbage-collected, and
    torch's allocator returns its cached blocks to the GPU, so the next run starts clean."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def free_gpu_memory() -> int:
    """Free bytes on the current GPU, once torch's cache has been handed back: under a
    room's per-seat limit (wd_teach.seat_memory), what is left of the limit."""
    release_gpu_memory()
    device = torch.device("cuda", torch.cuda.current_device())
    seat_memory.apply(device)
    return seat_memory.free_bytes(device)[0]


def gpu_measure(config: TrainConfig, gpu: bool | None = None) -> Callable[[int], int]:
    """measure(envs): build a Trainer of `config` at that size, run MEASURED_ITERATIONS and
    then the evaluation `wd-teach train` ends with (EVALUATION_EPISODES fresh episodes, its
    envs beside the training's), and give the most memory torch's allocator reserved
    meanwhile. Reserved, not allocated: the allocator takes the GPU's memory in blocks and
    keeps freed ones, and it is what it takes that must be free. Without the evaluation a
    fit under a seat's limit left no room for it, and the run failed at its very end."""
    from wd_teach.train.evaluation import EVALUATION_EPISODES
    from wd_teach.train.trainer import Trainer

    def measure(num_envs: int) -> int:
        release_gpu_memory()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_reserved()
        trainer = Trainer(config, overrides={"env": {"num_envs": num_envs}}, gpu=gpu)
        try:
            for _ in range(MEASURED_ITERATIONS):
                trainer.iterate()
            trainer.evaluate(num_envs=EVALUATION_EPISODES)
            torch.cuda.synchronize()
            return torch.cuda.max_memory_reserved() - before
        finally:
            del trainer
            release_gpu_memory()

    return measure
