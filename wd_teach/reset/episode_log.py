"""EpisodeLog: record a few environments for a whole episode on the device, look once at the end.

Pulling state to the host every step to watch an episode would stall the GPU each step. The
log instead preallocates, on the device, room for the whole episode of the chosen arrays of
the chosen environments, [episode_length + 1, chosen envs, ...] (the start and one row per
step), and keeps its step counter on the device too. `record()` is a few torch ops that copy
rows into it, with no host round trip; `pull()` brings it all to the host once, at the end,
and `Episode.plot()` draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from matplotlib.figure import Figure

from wd_teach.data import DataStore
from wd_teach.errors import LogError

#: How many lines of one environment one panel of a plot draws at most.
MAX_LINES = 8


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """torch has few kernels for uint32; an int32 view of the same bits has them all."""
    return tensor.view(torch.int32) if tensor.dtype == torch.uint32 else tensor


@dataclass(frozen=True)
class Episode:
    """What a log pulled: arrays [steps, chosen envs, ...] on the host, and which envs."""

    arrays: dict[str, np.ndarray]
    envs: tuple[int, ...]
    steps: int

    def plot(self, names: Sequence[str] | None = None, max_lines: int = MAX_LINES):
        return plot_episode(self, names, max_lines)


class EpisodeLog:
    """Record arrays `names` of environments `envs` at every `record()`, on the device.

    `length`: how many steps an episode has (the store's episode_length by default); the log
    holds length + 1 rows, the start included.
    """

    def __init__(self, store: DataStore, names: Sequence[str], envs: Sequence[int] = (0,),
                 length: int | None = None):
        if not isinstance(store, DataStore):
            raise LogError(f"EpisodeLog needs a DataStore, got {type(store).__name__}.")
        self.store = store
        self.names = _names(store, names)
        self.envs = _envs(store, envs)
        length = store.episode_length if length is None else length
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
            raise LogError(f"length must be a positive whole number of steps, got {length!r}.")
        self.rows = int(length) + 1
        device = store.device
        self._env_index = torch.tensor(self.envs, dtype=torch.long, device=device)
        self._buffers = {name: torch.zeros((self.rows, len(self.envs), *store[name].shape[1:]),
                                           dtype=store[name].dtype, device=device)
                         for name in self.names}
        self.steps = torch.zeros(1, dtype=torch.long, device=device)  # records made so far

    def record(self) -> None:
        """Copy the chosen rows into the log at the device's step counter, and count one.
        Past the last row, records overwrite it and `pull()` says so."""
        row = torch.clamp(self.steps, max=self.rows - 1)
        for name, buffer in self._buffers.items():
            chosen = _bits(self.store[name]).index_select(0, self._env_index)
            _bits(buffer).index_copy_(0, row, chosen.unsqueeze(0))
        self.steps += 1

    def clear(self) -> None:
        """Start a new episode at row 0 (the old rows stay until overwritten)."""
        self.steps.zero_()

    def pull(self) -> Episode:
        """The recorded rows on the host: the one copy from the device, at the end."""
        steps = int(self.steps.item())
        if steps > self.rows:
            raise LogError(f"{steps} records were made into a log of {self.rows} rows (an "
                           f"episode of {self.rows - 1} steps and its start); the last rows "
                           "were overwritten. Give EpisodeLog a larger length, or clear() it "
                           "at each new episode.")
        arrays = {name: buffer[:steps].cpu().numpy().copy()
                  for name, buffer in self._buffers.items()}
        return Episode(arrays, self.envs, steps)

    def __repr__(self) -> str:
        return (f"EpisodeLog({', '.join(self.names)} of envs {list(self.envs)}, "
                f"{self.rows} rows on {self.store.device})")


def plot_episode(episode: Episode, names: Sequence[str] | None = None,
                 max_lines: int = MAX_LINES):
    """One panel per (array, env): each value of the env's row over the steps (the first
    `max_lines` of them: one line per agent for a per-agent array). Returns the Figure,
    built without pyplot so that a notebook shows it once."""
    names = list(episode.arrays) if names is None else list(names)
    unknown = [n for n in names if n not in episode.arrays]
    if unknown:
        raise LogError(f"the episode has no {', '.join(map(repr, unknown))}; it has "
                       f"{', '.join(episode.arrays)}.")
    figure = Figure(figsize=(3.2 * len(episode.envs) + 1, 2.4 * len(names) + 0.6),
                    layout="constrained")
    axes = figure.subplots(len(names), len(episode.envs), squeeze=False, sharex=True)
    steps = np.arange(episode.steps)
    for r, name in enumerate(names):
        values = episode.arrays[name].reshape(episode.steps, len(episode.envs), -1)
        for c, env in enumerate(episode.envs):
            axis = axes[r, c]
            shown = min(values.shape[2], max_lines)
            for i in range(shown):
                axis.plot(steps, values[:, c, i], marker=".", label=f"{i}")
            more = f" (first {shown} of {values.shape[2]})" if shown < values.shape[2] else ""
            axis.set_title(f"{name}, env {env}{more}", fontsize=9)
            if c == 0:
                axis.set_ylabel(name)
            if r == len(names) - 1:
                axis.set_xlabel("record (0 = start)")
    return figure


def draw_reset(before, after, done, label: str, most: int = 12) -> Figure:
    """A per-environment value (a step counter, say) before and after a reset, for the first
    `most` environments: the done ones went back, the others kept theirs."""
    before, after = np.asarray(before)[:most], np.asarray(after)[:most]
    done = np.asarray(done)[:most] != 0
    envs = np.arange(len(before))
    figure = Figure(figsize=(max(5, 0.5 * len(envs) + 2), 3), layout="constrained")
    axis = figure.subplots()
    axis.bar(envs - 0.2, before, width=0.4, color="#bbbbbb", label="before the reset")
    axis.bar(envs + 0.2, after, width=0.4, color="#4c72b0", label="after")
    axis.plot(envs[done] + 0.2, after[done], "v", color="#c44e52", markersize=9,
              label="done: back to the start")
    axis.set_xticks(envs, [f"{e}\ndone" if d else str(e) for e, d in zip(envs, done,
                                                                          strict=True)])
    for tick, is_done in zip(axis.get_xticklabels(), done, strict=True):
        tick.set_color("#c44e52" if is_done else "black")
    top = max(float(before.max()), float(after.max()), 1.0)
    axis.set_ylim(min(0.0, float(after.min()), float(before.min())) * 1.1, top * 1.45)
    axis.set_xlabel("environment")
    axis.set_ylabel(label)
    axis.set_title(f"{label}: only the done environments start again", fontsize=10)
    axis.legend(fontsize=8, loc="upper left", ncol=3)
    return figure


def _names(store: DataStore, names) -> list[str]:
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names:
        raise LogError("name at least one array to log.")
    for name in names:
        if name not in store.names:
            raise LogError(f"no array named {name!r} to log. Arrays: "
                           f"{', '.join(store.names) or 'none'}.")
        if store.info(name).per == "shared":
            raise LogError(f"{name!r} is per='shared', the same for every environment; log "
                           "arrays that have a row per environment.")
    return names


def _envs(store: DataStore, envs) -> tuple[int, ...]:
    envs = [envs] if isinstance(envs, (int, np.integer)) else list(envs)
    if not envs:
        raise LogError("choose at least one environment to log.")
    for env in envs:
        if isinstance(env, (bool, np.bool_)) or not isinstance(env, (int, np.integer)) \
                or not 0 <= env < store.num_envs:
            raise LogError(f"environment {env!r} is not one of the store's 0..."
                           f"{store.num_envs - 1}.")
    return tuple(int(e) for e in envs)
