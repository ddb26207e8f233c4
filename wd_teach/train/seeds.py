"""Several seeds of one run: the evidence that a result is the algorithm's, not one draw's.

A single run of RL says little: the same config trained from another seed (other initial
weights, other starting states, other random actions) can learn faster, slower or not at
all. So a claim about what training does is made over several seeds, each named, and
reported with an interval (wd_teach/train/intervals.py), never from one run.

    runs = train_seeds("cartpole", seeds=[0, 1, 2, 3, 4], metric="cart/return")
    runs.curves          # [seeds, iterations]: the metric of every iteration, per seed
    runs.score("final")  # {seed: the mean of its last iterations}

The seeds run one after another in one call, each a whole `Trainer` of the config at this
machine's size (the config's full size on a GPU, its `cpu` block's toy size elsewhere). They
share nothing but the config: a seed's run is the run `Trainer` makes of that seed alone.
On a GPU they do not run side by side either. A small run is bound more by its kernel
launches than by the card's width, so seeds side by side (a process per seed, or every
network batched over the seeds) may well be faster; that is not measured, and not done here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

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
                progress: bool = False) -> SeedRuns:
    """Train `config` (anything `Trainer` takes) once per seed, one run after another.

    `metric`: the history key to follow (`POLICY/return`, or an env's `*_per_episode`).
    Each seed's "final" score is the mean of its `last` iterations' metric. `score(trainer)`,
    if given, is called on each trained trainer and returns a dict of more scores (e.g. an
    evaluation on fresh games against a baseline)."""
    from wd_teach.train.trainer import Trainer  # the trainer imports this layer's modules

    seeds = check_seeds(seeds)
    last = require_whole("last", last, low=1, error=TrainError)
    curves, env_steps, extra = [], None, []
    for seed in seeds:
        trainer = Trainer(config, overrides=merge(overrides or {}, {"trainer": {"seed": seed}}))
        history = trainer.train(iterations, progress=progress)
        if not history or metric not in history[0]:
            names = ", ".join(k for k in (history[0] if history else {}) if "/" in k)
            raise TrainError(f"metric {metric!r} is not in the history (train at least one "
                             f"iteration); its metrics: {names or 'none'}.")
        curves.append([row[metric] for row in history])
        env_steps = np.array([row["env_steps"] for row in history])
        extra.append(score(trainer) if score is not None else {})
    curves = np.asarray(curves, dtype=float)
    scores = {"final": _tail_means(curves, last)}
    for name in extra[0]:
        scores[name] = np.array([float(more[name]) for more in extra])
    return SeedRuns(metric, seeds, env_steps, curves, scores)


def _tail_means(curves: np.ndarray, last: int) -> np.ndarray:
    """Each row's mean over its last `last` finite values (NaN where it has none)."""
    means = []
    for row in curves:
        finite = row[np.isfinite(row)][-last:]
        means.append(finite.mean() if len(finite) else np.nan)
    return np.array(means)
