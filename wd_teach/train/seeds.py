"""Several seeds of one run: the evidence that a result is the algorithm's, not one draw's.

A single run of RL says little: the same config trained from another seed (other initial
weights, other starting states, other random actions) can learn faster, slower or not at
all. So a claim about what training does is made over several seeds, each named, and
reported with an interval (wd_teach/train/intervals.py), never from one run.

    runs = train_seeds("cartpole", seeds=[0, 1, 2, 3, 4], metric="cart/return")
    runs.curves          # [seeds, iterations]: the metric of every iteration, per seed
    runs.score("final")  # {seed: the mean of its last iterations}

Each seed is a whole `Trainer` of the config at this machine's size (the config's full size
on a GPU, its `cpu` block's toy size elsewhere). Seeds share nothing but the config: a seed's
run is the run `Trainer` makes of that seed alone, wherever it runs.

On a GPU the seeds train at once, side by side: a process each, all started together
(`at_once`), so the card takes kernels from all of them. Whether that is faster depends on
the run: each process pays its own start (torch, CUDA, compiling the kernels),
so short runs gain nothing. Lesson 07's five CartPole seeds (a few seconds each, replayed
as CUDA graphs) took 16.9 s side by side and 16.0 s one after another on an H200
(bench/seeds_at_once.py times both ways; bench/NOTES.md). Elsewhere (a CPU, or a room's
seat, whose GPU memory share was sized for one process) they run one after another in this
process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from wd_teach import seat_memory
from wd_teach.device import gpu_available
from wd_teach.errors import TrainError
from wd_teach.ranges import require_whole
from wd_teach.train.config import merge


@dataclass(frozen=True)
class SeedRuns:
    """What `train_seeds` found. Every array's first axis is `seeds`, in that order."""

    metric: str  # the history key the curves follow, e.g. "cart/return"
    seeds: tuple[int, ...]
    env_steps: np.ndarray  # [iterations]: env steps after each iteration (alike for every seed)
    curves: np.ndarray  # [seeds, iterations]: the metric; NaN where no episode ended
    scores: dict[str, np.ndarray]  # name -> [seeds]: "final", and what `score` returned

    def curve(self, seed: int) -> np.ndarray:
        """One seed's learning curve."""
        return self.curves[self._index(seed)]

    def score(self, name: str = "final") -> dict[int, float]:
        """{seed: score}: one score of every seed, named by its seed."""
        if name not in self.scores:
            raise TrainError(f"no score {name!r}; these runs have {', '.join(self.scores)}.")
        return dict(zip(self.seeds, self.scores[name].tolist(), strict=True))

    def _index(self, seed: int) -> int:
        if seed not in self.seeds:
            raise TrainError(f"seed {seed} was not trained; the seeds are {list(self.seeds)}.")
        return self.seeds.index(seed)


def check_seeds(seeds: Iterable[int]) -> tuple[int, ...]:
    """The seeds as a tuple, if they are whole numbers >= 0, at least one, none twice (a seed
    twice would count one run's luck twice)."""
    seeds = tuple(seeds)
    if not seeds:
        raise TrainError("seeds is empty: name the seeds to train, e.g. seeds=[0, 1, 2, 3, 4].")
    for seed in seeds:
        require_whole("seeds: each seed", seed, low=0, error=TrainError)
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise TrainError(f"seeds {twice} are named more than once: each seed is one run, and "
                         "a run counted twice makes an interval look surer than it is. Name "
                         "each seed once.")
    return seeds


def train_seeds(config, seeds: Iterable[int], iterations: int | None = None, *, metric: str,
                overrides: dict | None = None, score: Callable | None = None, last: int = 3,
                progress: bool = False, at_once: bool | None = None) -> SeedRuns:
    """Train `config` (anything `Trainer` takes) once per seed.

    `metric`: the history key to follow (`POLICY/return`, or an env's `*_per_episode`).
    Each seed's "final" score is the mean of its `last` iterations' metric. `score(trainer)`,
    if given, is called on each trained trainer and returns a dict of more scores (e.g. an
    evaluation on fresh games against a baseline).
    `at_once`: True trains the seeds side by side, a process each; False one after another
    in this process (with a progress bar if `progress`); None (the default) side by side on a
    GPU outside a room's seat, one after another elsewhere. Either way gives the same runs."""
    seeds = check_seeds(seeds)
    last = require_whole("last", last, low=1, error=TrainError)
    if at_once is None:
        at_once = len(seeds) > 1 and gpu_available() and seat_memory.limit_bytes() is None
    runs = [(config, seed, iterations, metric, overrides, score) for seed in seeds]
    if at_once:
        results = _side_by_side(runs)
    else:
        results = [train_one(*run, progress=progress) for run in runs]
    curves = np.asarray([curve for curve, _, _ in results], dtype=float)
    env_steps = results[0][1]
    scores = {"final": _tail_means(curves, last)}
    for name in results[0][2]:
        scores[name] = np.array([float(more[name]) for _, _, more in results])
    return SeedRuns(metric, seeds, env_steps, curves, scores)


def train_one(config, seed: int, iterations: int | None, metric: str, overrides: dict | None,
              score: Callable | None, progress: bool = False):
    """One seed's run: (its metric per iteration, env steps per iteration, its scores)."""
    from wd_teach.train.trainer import Trainer  # the trainer imports this layer's modules

    trainer = Trainer(config, overrides=merge(overrides or {}, {"trainer": {"seed": seed}}))
    history = trainer.train(iterations, progress=progress)
    if not history or metric not in history[0]:
        names = ", ".join(k for k in (history[0] if history else {}) if "/" in k)
        raise TrainError(f"metric {metric!r} is not in the history (train at least one "
                         f"iteration); its metrics: {names or 'none'}.")
    curve = [row[metric] for row in history]
    env_steps = np.array([row["env_steps"] for row in history])
    return curve, env_steps, (score(trainer) if score is not None else {})


def _side_by_side(runs: list[tuple]) -> list[tuple]:
    """`train_one` of every run at once, each in a process of its own, in the runs' order.

    The processes are spawned, not forked (a forked CUDA context does not work), so each
    imports torch and wd_teach afresh and compiles its own kernels. A `score` defined in a
    notebook lives in no module a new process can import, so every run travels through
    cloudpickle, which sends such functions by value. A room's seat limit is shared out."""
    import cloudpickle

    share = seat_memory.limit_bytes()
    share = None if share is None else share / len(runs) / seat_memory.GIB
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(runs), mp_context=spawn, initializer=_seat_share,
                             initargs=(share,)) as pool:
        pending = [pool.submit(_train_pickled, cloudpickle.dumps(run)) for run in runs]
        results = []
        for run, future in zip(runs, pending, strict=True):
            try:
                results.append(future.result())
            except TrainError:
                raise
            except Exception as err:  # a crash in the process: name the seed and the cause
                raise TrainError(f"seed {run[1]}'s run failed in its own process: "
                                 f"{type(err).__name__}: {err}. Run it alone with "
                                 "at_once=False to see it where it happens.") from err
    return results


def _train_pickled(run: bytes):
    import cloudpickle

    return train_one(*cloudpickle.loads(run))


def _seat_share(gib: float | None) -> None:
    """In each process: a room seat's GPU memory limit, divided among the seeds."""
    if gib is not None:
        os.environ[seat_memory.ENV_VAR] = f"{gib:.3f}"


def _tail_means(curves: np.ndarray, last: int) -> np.ndarray:
    """Each row's mean over its last `last` finite values (NaN where it has none)."""
    means = []
    for row in curves:
        finite = row[np.isfinite(row)][-last:]
        means.append(finite.mean() if len(finite) else np.nan)
    return np.array(means)
