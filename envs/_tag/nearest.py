"""The Tag games' nearest-neighbour search by itself, on a backend, from NumPy arrays: the
two kernels of nearest.cu (and their Numba twins in nearest_numba.py), for the tests that
hold them equal to the reference and for bench/nearest.py, which times them apart.

    from wd_teach_envs._tag.nearest import search
    slots = search(loc_x, loc_y, in_game, num_nearest=10, method="grid", backend="numba")

`slots[env, agent, k]` is the k-th nearest other agent still in the game (-1: no one), as
tag_reference.neighbors gives it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from wd_teach.data import DataStore
from wd_teach.errors import EnvError
from wd_teach.launch import KernelLauncher
from wd_teach_envs._tag import nearest_numba
from wd_teach_envs._tag.nearest_numba import GRID_MAX_AGENTS, GRID_MAX_SIDE
from wd_teach_envs._tag.tag_numba import MAX_NEAREST, MAX_THREADS

HERE = Path(__file__).parent
METHODS = ("tiles", "grid")
#: Agents per cell that grid_side_for aims at: about two, so that the ring around an
#: agent's own cell (9 cells, about 18 agents) holds its 10 nearest or nearly.
AGENTS_PER_CELL = 2


def grid_side_for(num_agents: int) -> int:
    """Cells along a side for a game of num_agents: about AGENTS_PER_CELL to a cell."""
    return max(1, min(GRID_MAX_SIDE, round(math.sqrt(num_agents / AGENTS_PER_CELL))))


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
        # max_threads: fewer than the agents gives an env several blocks (the tests do).
        self.launcher = KernelLauncher(self.store, backend, max_threads=max_threads)
        self.launcher.load(HERE / "nearest.cu" if self.launcher.backend.name == "pycuda"
                           else nearest_numba)

    def run(self, method: str = "grid") -> None:
        """Search by `method`, into slots cleared first: a slot the kernel missed is -2."""
        if method not in METHODS:
            raise EnvError(f"method must be one of {', '.join(METHODS)}, got {method!r}.")
        if method == "grid" and self.store.num_agents > GRID_MAX_AGENTS:
            raise EnvError(f"the grid holds at most {GRID_MAX_AGENTS:,} agents of an env in "
                           f"shared memory, and this game has {self.store.num_agents:,}: use "
                           "method='tiles'.")
        self.store["nearest"].fill_(-2)
        self.launcher.launch(f"tag_nearest_{method}")

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
