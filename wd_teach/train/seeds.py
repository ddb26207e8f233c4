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
(`at_once`). The card does not run the processes' kernels together (without NVIDIA's MPS it
switches between their contexts); it runs one process's kernels while the others' Python
prepares their next ones. Whether that is faster depends on the run: each process pays its
own start (torch, CUDA, compiling the kernels), so short runs gain nothing. Lesson 07's five
CartPole seeds (a few seconds each, replayed as CUDA graphs) took 16.9 s side by side and
16.0 s one after another on an H200 (bench/seeds_at_once.py times both ways, with no score;
bench/NOTES.md says which version of this module it timed). Elsewhere (a CPU, or a room's
seat, whose GPU memory share was sized for one process) they run one after another in this
process.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.multiprocessing.spawn import ProcessException

from wd_teach import floors, seat_memory
from wd_teach.device import gpu_available
from wd_teach.errors import TrainError
from wd_teach.ranges import require_whole
from wd_teach.train.config import load_config, merge


@dataclass(frozen=True)
class SeedRuns:
    """What `train_seeds` found. Every array's first axis is `seeds`, in that order."""

    metric: str  # the history key the curves follow, e.g. "cart/return"
    seeds: tuple[int, ...]
    env_steps: np.ndarray  # [iterations]: env steps after each iteration (alike for every seed)
    curves: np.ndarray  # [seeds, iterations]: the metric; NaN where no episode ended
    scores: dict[str, np.ndarray]  # name -> [seeds]: "final", and what `score` returned
    at_once: bool = False  # trained side by side (a process each), or one after another

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
    runs = [(config, seed, iterations, metric, overrides) for seed in seeds]
    if at_once:
        load_config(config, overrides=merge(overrides or {}, {"trainer": {"seed": seeds[0]}}))
        trained = _side_by_side(runs, keep=score is not None)  # the config checked first
    else:
        trained = (train_one(*run, progress=progress) for run in runs)
    curves, steps, extra = [], [], []
    for trainer, curve, env_steps in trained:  # each trainer scored, then let go
        curves.append(curve)
        steps.append(env_steps)
        extra.append(score(trainer) if score is not None else {})
    curves = np.asarray(curves, dtype=float)
    scores = {"final": _tail_means(curves, last)}
    for name in extra[0]:
        scores[name] = np.array([float(more[name]) for more in extra])
    return SeedRuns(metric, seeds, steps[0], curves, scores, at_once)  # steps: alike for all


def train_one(config, seed: int, iterations: int | None, metric: str, overrides: dict | None,
              progress: bool = False):
    """One seed's run: (its trainer, its metric per iteration, env steps per iteration)."""
    from wd_teach.train.trainer import Trainer  # the trainer imports this layer's modules

    trainer = Trainer(config, overrides=merge(overrides or {}, {"trainer": {"seed": seed}}))
    history = trainer.train(iterations, progress=progress)
    if not history or metric not in history[0]:
        names = ", ".join(k for k in (history[0] if history else {}) if "/" in k)
        raise TrainError(f"metric {metric!r} is not in the history (train at least one "
                         f"iteration); its metrics: {names or 'none'}.")
    return trainer, [row[metric] for row in history], np.array([row["env_steps"]
                                                                for row in history])


def _side_by_side(runs: list[tuple], keep: bool):
    """`train_one` of every run at once, each in a process of its own; yields, in the runs'
    order, each run's trainer (with `keep`, made again here from the checkpoint its process
    wrote; else None), curve and env steps.

    The processes are spawned, not forked (a forked child cannot use CUDA its parent
    started), so each imports torch and wd_teach afresh and compiles its own kernels; each
    is handed this process's choice of floor (wd_teach.floors), which a notebook may have
    set. What a process hands back is a checkpoint (safetensors) and a JSON file, as the
    data-parallel ranks do: nothing comes back as a pickle, which would run code when read.
    So a `score` never travels: it runs here, on the trainer the checkpoint makes again (a
    checkpoint resumes a run exactly: weights, optimisers, the env's state and the run's
    own random generators; torch's global generator is not a run's and is not in it).
    Every process's result is read before any trainer is made, so a failed seed is named
    first, and the checkpoints are read into memory before their folder goes."""
    from wd_teach.train.checkpoint import read_checkpoint
    from wd_teach.train.trainer import Trainer

    share = seat_share(seat_memory.limit_bytes(), len(runs))
    with tempfile.TemporaryDirectory(prefix="wd_teach_seeds_") as folder:
        try:
            torch.multiprocessing.spawn(_seed_main, args=(runs, folder, keep, share,
                                                          floors.fast_setting()),
                                        nprocs=len(runs), join=True)
        except ProcessException as err:  # killed, crashed, or failed outside its own report
            raise TrainError(f"seed {runs[err.error_index][1]}'s process ended without a "
                             f"result ({type(err).__name__}: {err}). Run it alone with "
                             "at_once=False to see where it fails.") from err
        results = [_result(Path(folder) / f"seed{index}", run[1])
                   for index, run in enumerate(runs)]
        states = [read_checkpoint(Path(folder) / f"seed{index}.safetensors") if keep else None
                  for index in range(len(runs))]
    for run, state, (curve, env_steps) in zip(runs, states, results, strict=True):
        trainer = (Trainer.from_state(state, f"seed {run[1]}'s checkpoint")
                   if state is not None else None)
        yield trainer, curve, env_steps


def _result(path: Path, seed: int) -> tuple[list, np.ndarray]:
    """A seed's curve and env steps from the JSON its process wrote, or its error raised."""
    report = path.with_suffix(".json")
    if not report.exists():
        raise TrainError(f"seed {seed}'s process wrote no result (stopped before its end, "
                         "e.g. by an interrupt). Run it alone with at_once=False.")
    found = json.loads(report.read_text())
    if "error" in found:
        raise TrainError(found["error"] if found["train_error"] else
                         f"seed {seed}'s run failed in its own process: {found['error']}. "
                         "Run it alone with at_once=False to see it where it happens.")
    return found["curve"], np.array(found["env_steps"])


def seat_share(limit: int | None, processes: int) -> str | None:
    """A room seat's GPU memory limit (bytes; None: no seat) shared among `processes`, as
    WD_TEACH_GPU_MEMORY_GB's value: whole MiB, rounded down, so that the shares never add up
    to more than the seat's. They bound torch's allocator in each process; each process's
    CUDA context (a few hundred MiB) comes on top, as it does for a seat's one process."""
    if limit is None:
        return None
    mib = limit // processes // 2**20
    if mib < 1:
        raise TrainError(f"a seat's GPU memory limit of {limit} bytes shared among {processes} "
                         "seeds leaves under 1 MiB each: train them one after another "
                         "(at_once=False).")
    return repr(mib / 1024)  # exact: a whole number of MiB is a short binary fraction of GiB


def _seed_main(index: int, runs: list[tuple], folder: str, keep: bool, share: str | None,
               fast: bool | None) -> None:
    """One seed's process: train, then write a JSON of the curve (or of the error, so that
    the parent names it) and, with `keep`, the checkpoint."""
    if share is not None:  # a room seat's GPU memory limit, divided among the seeds
        os.environ[seat_memory.ENV_VAR] = share
    floors.set_fast(fast)
    out = Path(folder) / f"seed{index}"
    try:
        trainer, curve, env_steps = train_one(*runs[index])
        if keep:
            trainer.save(out.with_suffix(".safetensors"))
        found = {"curve": curve, "env_steps": env_steps.tolist()}
    except Exception as err:
        ours = isinstance(err, TrainError)  # its words say what to do; others get the type
        found = {"error": str(err) if ours else f"{type(err).__name__}: {err}",
                 "train_error": ours}
    out.with_suffix(".json").write_text(json.dumps(found))


def _tail_means(curves: np.ndarray, last: int) -> np.ndarray:
    """Each row's mean over its last `last` finite values (NaN where it has none)."""
    means = []
    for row in curves:
        finite = row[np.isfinite(row)][-last:]
        means.append(finite.mean() if len(finite) else np.nan)
    return np.array(means)
