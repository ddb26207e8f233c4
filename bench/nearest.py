"""The Tag games' nearest-neighbour search alone: the tiled search the observe kernels do
against the spatial grid (envs/_tag/nearest.cu and its Numba twin), at the seed's 2,000 envs.

    python bench/nearest.py bench/results/nearest_h200.json
    python bench/nearest.py out.json --envs 500 --agents 110,1000 --backends numba

Each row: a backend, a method and a number of agents; the median time of one search over
every agent of every env (CUDA events, `--calls` timed calls after warm-up), the pairs of
agents it compared a second if it compared them all (num_agents x (num_agents - 1) per env),
and whether its slots equal the other method's on the same field (they must: the tests hold
both to the NumPy reference; each method's slots are cleared before it runs). A table to
read, never a pass or fail. A random field of the continuous game's size (20 x 20), every
agent in the game, 10 nearest. `--threads 1024,256` times the grid search again with blocks
of fewer threads (an env then has several blocks, each building the env's whole grid and
searching its own agents): how the search's time depends on the blocks an SM can hold.
Method `cells` is the grid search with its agents given to the threads cell by cell
(grid_by_cell, nearest.cu), as the games launch it, so that a warp's lanes search the same
cells; method `grid` gives them by index, as the games did before; `--in-game 0.2`
leaves four agents in five out of the game, as a Tag step finds them after its first games.

`search()` and `NearestSearch` run either kernel from NumPy arrays on a backend, with their
input checked; tests/test_tag_nearest.py holds both to tag_reference.neighbors with them.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

import numpy as np
import torch

from wd_teach.data import DataStore
from wd_teach.errors import EnvError
from wd_teach.launch import KernelLauncher, launch_geometry
from wd_teach.scale.bench import machine, versions, write_results
from wd_teach.timing import time_calls
from wd_teach_envs._tag import nearest_numba
from wd_teach_envs._tag.game import TAG_FOLDER as TAG
from wd_teach_envs._tag.game import grid_side_for
from wd_teach_envs._tag.nearest_numba import GRID_MAX_AGENTS, GRID_MAX_SIDE
from wd_teach_envs._tag.tag_numba import MAX_NEAREST, MAX_THREADS

FIELD = 20.0
METHODS = ("tiles", "grid", "cells")  # cells: the grid search, agents given to threads by cell
# the grid search's arguments with grid_by_cell = 1, as the games launch it (the store's
# grid_by_cell is 0: method "grid", the agents by index)
BY_CELL_ARGS = ("loc_x", "loc_y", "in_game", "nearest", "num_agents", "num_nearest",
                "grid_side", "field_size", "grid_by_cell_on")


class _Kernels:
    """What the backend seam asks an env for its step, asked here for the two searches:
    nearest.cu for PyCUDA, its Numba twin for Numba."""

    def cuda_sources(self):
        return [TAG / "nearest.cu"]

    def include_dirs(self):
        return [TAG]

    def numba_kernels(self):
        return nearest_numba


class NearestSearch:
    """Both kernels loaded on one backend over one store of positions: `run()` searches,
    `slots()` pulls the answer. The store is made once, so a benchmark times the kernel."""

    def __init__(self, loc_x, loc_y, in_game, num_nearest: int, backend: str,
                 grid_side: int | None = None, field_size: float | None = None,
                 max_threads: int = MAX_THREADS):
        loc_x, loc_y, in_game = _checked(loc_x, loc_y, in_game, num_nearest)
        num_envs, num_agents = loc_x.shape
        grid_side = grid_side_for(num_agents) if grid_side is None else grid_side
        if field_size is None:
            field_size = float(max(loc_x.max(), loc_y.max(), 1e-6))
        _check_grid(grid_side, field_size)
        self.store = DataStore(num_envs, num_agents)
        self.store.push("loc_x", loc_x)
        self.store.push("loc_y", loc_y)
        self.store.push("in_game", in_game)
        self.store.push("nearest", np.full((num_envs, num_agents, num_nearest), -2, np.int32))
        self.store.set_constant("num_nearest", int(num_nearest))
        self.store.set_constant("grid_side", int(grid_side))
        self.store.set_constant("field_size", float(field_size))
        self.store.set_constant("grid_by_cell", 0)
        self.store.set_constant("grid_by_cell_on", 1)
        # max_threads: fewer than the agents gives an env several blocks (the tests do).
        self.launcher = KernelLauncher(self.store, backend, max_threads=max_threads)
        for kernels, folders in self.launcher.backend.env_kernels(_Kernels()):
            self.launcher.load(kernels, folders)

    def run(self, method: str = "grid", threads: int | None = None) -> None:
        """Search by `method`, into slots cleared first: a slot the kernel missed is -2.
        `threads`: the block size (several blocks an env where fewer than its agents);
        None, the launcher's, max_threads."""
        if method not in METHODS:
            raise EnvError(f"method must be one of {', '.join(METHODS)}, got {method!r}.")
        if method != "tiles" and self.store.num_agents > GRID_MAX_AGENTS:
            raise EnvError(f"the grid holds at most {GRID_MAX_AGENTS:,} agents of an env in "
                           f"shared memory, and this game has {self.store.num_agents:,}: use "
                           "method='tiles'.")
        self.store["nearest"].fill_(-2)
        geometry = self.launcher.geometry if threads is None else launch_geometry(
            self.store.num_envs, self.store.num_agents, threads)
        if method == "cells":
            self.launcher.launch("tag_nearest_grid", *BY_CELL_ARGS, grid=geometry.grid,
                                 block=geometry.block)
        else:
            self.launcher.launch(f"tag_nearest_{method}", grid=geometry.grid,
                                 block=geometry.block)

    def slots(self) -> np.ndarray:
        return self.store.pull("nearest").astype(np.int64)


def search(loc_x, loc_y, in_game, num_nearest: int, method: str = "grid",
           backend: str | None = None, grid_side: int | None = None,
           field_size: float | None = None, max_threads: int = MAX_THREADS) -> np.ndarray:
    """[env, agent, slot]: each agent's num_nearest nearest others in the game, nearest
    first and the lower index first among equals (-1: no one), found by `method`'s kernel.
    The grid's cells cover [0, field_size] on both axes (default: the largest coordinate);
    grid_side cells a side (default: grid_side_for the number of agents)."""
    finder = NearestSearch(loc_x, loc_y, in_game, num_nearest, backend, grid_side,
                           field_size, max_threads)
    finder.run(method)
    return finder.slots()


def _checked(loc_x, loc_y, in_game, num_nearest):
    arrays = {"loc_x": loc_x, "loc_y": loc_y, "in_game": in_game}
    for name, a in arrays.items():
        if not isinstance(a, np.ndarray) or a.ndim != 2:
            raise EnvError(f"{name} must be a 2-D NumPy array [env, agent], got "
                           f"{getattr(a, 'shape', type(a).__name__)}.")
    if not loc_x.shape == loc_y.shape == in_game.shape:
        raise EnvError(f"loc_x, loc_y and in_game must have one shape [env, agent], got "
                       f"{loc_x.shape}, {loc_y.shape} and {in_game.shape}.")
    if loc_x.dtype != np.float32 or loc_y.dtype != np.float32 or in_game.dtype != np.int32:
        raise EnvError(f"positions must be float32 and in_game int32 (as the Tag games keep "
                       f"them), got {loc_x.dtype}, {loc_y.dtype} and {in_game.dtype}.")
    if not (np.isfinite(loc_x).all() and np.isfinite(loc_y).all()):
        raise EnvError("positions must be finite: a NaN or infinite position has no "
                       "distance to compare.")
    num_envs, num_agents = loc_x.shape
    if num_envs < 1 or num_agents < 2:
        raise EnvError(f"a search needs at least one env of at least 2 agents, got "
                       f"{num_envs} envs of {num_agents}.")
    most = min(MAX_NEAREST, num_agents - 1)
    if isinstance(num_nearest, bool) or not isinstance(num_nearest, (int, np.integer)) \
            or not 1 <= num_nearest <= most:
        raise EnvError(f"num_nearest must be a whole number from 1 to {most} (the other "
                       f"agents, at most {MAX_NEAREST}), got {num_nearest!r}.")
    return (np.ascontiguousarray(loc_x), np.ascontiguousarray(loc_y),
            np.ascontiguousarray(in_game))


def _check_grid(grid_side, field_size) -> None:
    if isinstance(grid_side, bool) or not isinstance(grid_side, (int, np.integer)) \
            or not 1 <= grid_side <= GRID_MAX_SIDE:
        raise EnvError(f"grid_side must be a whole number from 1 to {GRID_MAX_SIDE}, got "
                       f"{grid_side!r}.")
    if isinstance(field_size, bool) or not (
            isinstance(field_size, (int, float, np.integer, np.floating))
            and math.isfinite(field_size) and field_size > 0):
        raise EnvError(f"field_size must be a positive number, got {field_size!r}.")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--envs", type=int, default=2000)
    parser.add_argument("--agents", default="110,500,1000")
    parser.add_argument("--nearest", type=int, default=10)
    parser.add_argument("--backends", default="pycuda,numba")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--in-game", type=float, default=1.0,
                        help="the share of each env's agents in the game, the rest out of it "
                             "(a Tag step's state after its first games: about 0.2)")
    parser.add_argument("--threads", default=str(MAX_THREADS),
                        help="threads a block, commas: the grid search at each (the tiled "
                             "search at the first)")
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    gpu = torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    rows = []
    print(f"{'backend':<8} {'method':<6} {'agents':>6} {'grid':>5} {'threads':>7} "
          f"{'ms/search':>10} {'pairs/s':>10} {'same slots':>10}")
    for agents in (int(a) for a in args.agents.split(",")):
        rng = np.random.default_rng(agents)
        shape = (args.envs, agents)
        loc_x = rng.uniform(0, FIELD, shape).astype(np.float32)
        loc_y = rng.uniform(0, FIELD, shape).astype(np.float32)
        in_game = (rng.random(shape) < args.in_game).astype(np.int32)
        for backend in args.backends.split(","):
            finder = NearestSearch(loc_x, loc_y, in_game, args.nearest, backend,
                                   field_size=FIELD)
            tiles = None  # the tiled search's slots, at the first threads: what grid must equal
            for block in threads:
                for method in METHODS if tiles is None else ("grid", "cells"):
                    timed = time_calls(lambda f=finder, m=method, b=block: f.run(m, b),
                                       args.calls, warmup=3, device=device)
                    slots = finder.slots()
                    if method == "tiles":
                        tiles = slots
                    ms = 1e3 * statistics.median(timed.per_call)
                    row = {"backend": backend, "method": method, "agents": agents,
                           "envs": args.envs, "nearest": args.nearest,
                           "threads": launch_geometry(args.envs, agents, block).threads,
                           "in_game": args.in_game,
                           "grid_side": grid_side_for(agents) if method != "tiles" else None,
                           "ms_per_search": ms,
                           "pairs_per_second": args.envs * agents * (agents - 1) / (ms / 1e3),
                           "same_slots": bool(np.array_equal(tiles, slots))}
                    rows.append(row)
                    print(f"{backend:<8} {method:<6} {agents:>6} {row['grid_side'] or '-':>5} "
                          f"{row['threads']:>7} {ms:>10.3f} {row['pairs_per_second']:>10.3g} "
                          f"{'yes' if row['same_slots'] else 'NO':>10}", flush=True)
    result = {"benchmark": "nearest", "machine": machine(), "versions": versions(),
              "field_size": FIELD, "calls": args.calls, "rows": rows}
    write_results(result, args.out)
    return result


if __name__ == "__main__":
    main()
