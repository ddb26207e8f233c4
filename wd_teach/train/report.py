"""What a training run leaves behind: metrics as CSV and JSON, and pictures of them.

The history of a run is a list of rows, one per iteration, keyed as in `Trainer.iterate`
(`POLICY/return`, `time/policy`, ...). These functions write it and draw it; the CLI, the
notebooks and the benchmark all call them. Every file is written whole or not at all
(wd_teach.files.atomic_write): a run killed mid-write leaves the previous file, never half.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import numpy as np
from matplotlib import pyplot as plt

from wd_teach.files import atomic_write
from wd_teach.train.metrics import PHASES


def columns(history: list[dict]) -> list[str]:
    """Every key of the history, in the order they first appear."""
    seen: dict[str, None] = {}
    for row in history:
        seen.update(dict.fromkeys(row))
    return list(seen)


def write_csv(history: list[dict], path: str | Path) -> Path:
    path = Path(path)
    with atomic_write(path) as temporary, temporary.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns(history))
        writer.writeheader()
        writer.writerows(history)
    return path


def write_json(history: list[dict], path: str | Path, **extra) -> Path:
    """The history as JSON (NaN as null), with `extra` keys beside it."""
    clean = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
              for k, v in row.items()} for row in history]
    path = Path(path)
    with atomic_write(path) as temporary:
        temporary.write_text(json.dumps({**extra, "history": clean}, indent=1))
    return path


def save_figure(figure, path: str | Path, dpi: int = 100) -> Path:
    """A matplotlib figure as a PNG, whole or not at all. The format is named, since the
    temporary file's name does not end in .png."""
    path = Path(path)
    with atomic_write(path) as temporary:
        figure.savefig(temporary, format="png", dpi=dpi, bbox_inches="tight")
    return path


def series(history: list[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    """(env steps, values) of `key`, leaving out iterations where it is NaN or missing."""
    pairs = [(row["env_steps"], row[key]) for row in history
             if key in row and row[key] is not None and math.isfinite(row[key])]
    if not pairs:
        return np.zeros(0), np.zeros(0)
    steps, values = zip(*pairs, strict=True)
    return np.asarray(steps), np.asarray(values)


def plot_learning_curves(history: list[dict], groups: list[str], title: str = "",
                         target: float | None = None, ax=None,
                         metrics: dict[str, str] | None = None):
    """Each policy's mean episode return against env steps, and the env's own episode
    metrics on a second axis (`metrics`: history key -> axis label; by default every
    `*_per_episode` key, labelled by its name). Falls back to the reward per step where no
    episode has ended yet."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    for group in groups:
        key = f"{group}/return"
        steps, values = series(history, key)
        if len(values) == 0:
            key = f"{group}/reward"
            steps, values = series(history, key)
        ax.plot(steps, values, marker=".", label=key)
    if target is not None:
        ax.axhline(target, color="0.5", ls="--", label=f"target {target:g}")
    ax.set(xlabel="environment steps", ylabel="mean episode return per agent",
           title=title or "Learning curve")
    if metrics is None:
        keys = dict.fromkeys(k for row in history for k in row if k.endswith("_per_episode"))
        metrics = {key: key.replace("_", " ") for key in keys}
    shown = {key: label for key, label in metrics.items() if len(series(history, key)[1])}
    if shown:
        twin = ax.twinx()
        colors = itertools.cycle(["tab:red", "tab:purple", "tab:brown"])
        for (key, label), color in zip(shown.items(), colors, strict=False):  # colors cycle
            steps, values = series(history, key)
            twin.plot(steps, values, color=color, ls=":", marker=".", label=label)
        twin.set_ylabel(", ".join(shown.values()))
        twin.legend(loc="lower right", fontsize=8)
    ax.legend(loc="upper left", fontsize=8)
    return ax


def time_breakdown(history: list[dict]) -> dict[str, float]:
    """Seconds per phase, summed over the profiled iterations of the history."""
    totals: dict[str, float] = {}
    for row in history:
        for key, value in row.items():
            if key.startswith("time/") and key != "time/total":
                totals[key[5:]] = totals.get(key[5:], 0.0) + value
    order = [*PHASES, "other"]
    return {k: totals[k] for k in order if k in totals}


def plot_time_breakdown(history: list[dict], title: str = "", ax=None):
    """Where an iteration's time goes: one horizontal bar split by phase."""
    times = time_breakdown(history)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 1.8))
    total = sum(times.values()) or 1.0
    left = 0.0
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "0.7"]
    for (phase, seconds), color in zip(times.items(), colors, strict=False):
        share = seconds / total
        ax.barh([0], [share], left=left, color=color, label=f"{phase} {100 * share:.0f}%")
        left += share
    ax.set(xlim=(0, 1), yticks=[], xlabel="share of the iteration's time",
           title=title or "Where the time goes")
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.45))
    return ax


def plot_seed_curves(runs, title: str = "", target: float | None = None, ax=None):
    """One learning curve per seed of `runs` (wd_teach.train.seeds.SeedRuns), each labelled
    with its seed, and their IQM over the seeds with its 95% confidence band."""
    from wd_teach.train.intervals import iqm_curve

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    for seed, curve in zip(runs.seeds, runs.curves, strict=True):
        ax.plot(runs.env_steps, curve, lw=1, alpha=0.6, label=f"seed {seed}")
    middle, low, high = iqm_curve(runs.curves)
    ax.plot(runs.env_steps, middle, color="k", lw=2, label="IQM over the seeds")
    ax.fill_between(runs.env_steps, low, high, color="k", alpha=0.15, label="95% CI of the IQM")
    if target is not None:
        ax.axhline(target, color="0.5", ls="--", label=f"target {target:g}")
    ax.set(xlabel="environment steps", ylabel=runs.metric, title=title or "Learning curves")
    ax.legend(loc="best", fontsize=8, ncol=2)
    return ax
