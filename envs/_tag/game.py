"""The Python half of what the two Tag games share: the config fields both have, the
observation's layout, and the arrays both keep.

Agents 0 .. num_taggers - 1 are taggers, the rest runners. Each step: every agent moves
(the game's own move kernel), runners within reach of a tagger are caught (tag_catch, shared),
then every agent observes and the game may end (the game's own observe kernel, built from
shared device functions).

An observation is the agent's own block, then one slot per neighbour:

    own    x / field_size, y / field_size, is_runner, in_game, then the game's own features
    slot   present, dx / field_size, dy / field_size, is_runner, then the game's own features

The neighbours are the num_nearest others still in the game, nearest first; with
num_nearest=None, every other agent in index order (full observation). Empty slots are 0.
The store's `nearest` [env, agent, slot] says which agent each slot shows (-1: no one).

Two searches find the nearest, with the same answer bit for bit (nearest.cu says how):
`search="tiles"` compares every pair inside the observe kernel, as lesson 06 teaches;
`search="grid"` runs nearest.cu's tag_nearest_grid before it, a spatial grid in shared
memory, for big games (a few dozen pairs an agent instead of all of them). It is for speed
only: the NumPy reference has one search, and the observations are the same.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from gymnasium import spaces

from wd_teach.env import OBS, Env, EpisodeMetric, StateArray, Tolerance, fast_floor, require
from wd_teach_envs._tag.nearest_numba import AGENTS_PER_CELL, GRID_MAX_AGENTS, GRID_MAX_SIDE
from wd_teach_envs._tag.tag_numba import MAX_NEAREST

#: This folder: tag.cuh and tag.cu, the CUDA C the two games share.
TAG_FOLDER = Path(__file__).parent
#: The shared catch kernel, in CUDA C (its Numba twin is tag_catch in tag_numba.py).
TAG_CU = TAG_FOLDER / "tag.cu"
#: What both games' CUDA C share, #included by their step.cu (its Numba twin: tag_numba.py).
TAG_CUH = TAG_FOLDER / "tag.cuh"
#: The grid search, run before the observe kernel with search="grid" (twin: nearest_numba.py).
NEAREST_CU = TAG_FOLDER / "nearest.cu"
#: The searches a game can use to find each agent's nearest (see the module's docstring).
SEARCHES = ("tiles", "grid")
#: Threads a block of the grid search (Env.step_threads), several blocks an env, each
#: building its env's whole grid and searching its own agents. Timed alone at 2,000 envs of
#: 1,000 agents on an H100 (bench/NOTES.md, "The grid search in smaller blocks ...,
#: measured"): 1,000 a block 1.208 ms (PyCUDA) and 1.359 ms (Numba), 512 1.125 and 1.156,
#: 256 1.133 and 1.191, 128 1.343 and 1.413. A game of 512 agents or fewer: one block.
GRID_THREADS = 512
#: AGENTS_PER_CELL (nearest_numba.py, nearest.cu): the agents a cell that the grid aims at,
#: about two, so that the ring around an agent's own cell (9 cells, about 18 agents) holds
#: its 10 nearest or nearly.
#: When a benchmark sizes a game by its number of agents: runners per tagger, and the most
#: neighbours each agent sees (the benchmark game: 10 taggers, 100 runners, 10 nearest).
RUNNERS_PER_TAGGER = 10
SIZED_NEAREST = 10
#: The features of an own block and of a neighbour slot that every Tag game has.
OWN_FEATURES = ("x", "y", "is runner", "in game")
SLOT_FEATURES = ("present", "dx", "dy", "is runner")


@dataclass(frozen=True)
class TagConfig:
    """The fields both Tag games have. Rewards are per agent and per step."""

    num_taggers: int = 10
    num_runners: int = 100
    episode_length: int = 500
    num_nearest: int | None = 10  # None: every agent sees all others (full observation)
    runner_exits_when_tagged: bool = True
    # taggers within reach of a runner at once to catch it: with more than one, a lone
    # tagger catches no one, so taggers must learn to close in together (and each of them
    # gets tag_reward for the catch)
    taggers_needed: int = 1
    tag_reward: float = 1.0  # to a tagger, for each runner it catches
    tag_penalty: float = -1.0  # to a runner, when caught
    tagger_step_reward: float = -0.01  # every step: taggers should hurry
    runner_step_reward: float = 0.01  # every step a runner is still in the game
    edge_penalty: float = -0.1  # for running into the edge of the field
    end_reward: float = 1.0  # to each runner still in the game when time is up
    search: str = "tiles"  # how the kernels find the nearest: "tiles" or "grid" (see above)

    def validate(self) -> None:
        for name in ("num_taggers", "num_runners", "episode_length"):
            value = getattr(self, name)
            require(isinstance(value, (int, np.integer)) and not isinstance(value, bool),
                    f"{name} must be a whole number, got {value!r}.")
        require(self.num_taggers >= 1, f"Tag needs at least one tagger, got "
                                       f"num_taggers={self.num_taggers}.")
        require(self.num_runners >= 1, f"Tag needs at least one runner, got "
                                       f"num_runners={self.num_runners}.")
        require(self.episode_length >= 1, f"episode_length must be at least 1, got "
                                          f"{self.episode_length}.")
        require(isinstance(self.taggers_needed, (int, np.integer))
                and not isinstance(self.taggers_needed, bool)
                and 1 <= self.taggers_needed <= self.num_taggers,
                f"taggers_needed must be a whole number from 1 to num_taggers="
                f"{self.num_taggers}, got {self.taggers_needed!r}.")
        others = self.num_taggers + self.num_runners - 1
        if self.num_nearest is not None:
            most = min(MAX_NEAREST, others)
            require(isinstance(self.num_nearest, int) and 1 <= self.num_nearest <= most,
                    f"num_nearest must be between 1 and {most} (the other agents, at most "
                    f"{MAX_NEAREST}), got {self.num_nearest!r}. Use num_nearest=None to "
                    "let every agent see all the others.")
        require(self.search in SEARCHES, f"search must be one of {', '.join(SEARCHES)}, got "
                                         f"{self.search!r}.")
        if self.search == "grid":
            agents = self.num_taggers + self.num_runners
            require(self.num_nearest is not None,
                    "search='grid' finds the nearest, but num_nearest=None shows every agent: "
                    "there is nothing to search. Give num_nearest, or use search='tiles'.")
            require(agents <= GRID_MAX_AGENTS,
                    f"search='grid' holds an env's agents in shared memory, at most "
                    f"{GRID_MAX_AGENTS:,}; this game has {agents:,}. Use search='tiles'.")
        for name in ("tag_reward", "tag_penalty", "tagger_step_reward", "runner_step_reward",
                     "edge_penalty", "end_reward"):
            value = getattr(self, name)
            require(isinstance(value, (int, float)) and math.isfinite(value),
                    f"{name} must be a finite number, got {value!r}.")


def grid_side_for(num_agents: int) -> int:
    """Cells along a side of the grid search for a game of num_agents: about
    AGENTS_PER_CELL agents to a cell, at most GRID_MAX_SIDE. The kernel takes this as its
    largest grid, and each step sizes its own by the agents still in the game."""
    return max(1, min(GRID_MAX_SIDE, round(math.sqrt(num_agents / AGENTS_PER_CELL))))


class TagGame(Env):
    """The base of both Tag games. A game names `game_kernels` (its move, tag_catch and its
    observe), `game_features` (its own features after the shared ones, in its own block and
    in each slot) and writes `action_space`, `initial_positions()`, `game_state()` and
    `game_constants()`."""

    shared_cuda = (TAG_CU, NEAREST_CU)
    step_threads = {"tag_nearest_grid": GRID_THREADS}
    tolerance = Tolerance(rtol=0.0, atol=1e-6,
                          why="no transcendentals and no fused multiply-adds: every backend "
                              "rounds alike, so any difference is a bug")
    game_features: ClassVar[tuple[str, ...]] = ()
    game_kernels: ClassVar[tuple[str, str, str]]
    rewritten_each_step = ("nearest",)  # every observe writes it (grid: searched just before)

    @property
    def step_kernels(self) -> tuple[str, ...]:
        """The game's kernels; with search="grid", the grid search just before the observe."""
        move, catch, observe = self.game_kernels
        if self.config.search == "grid":
            return (move, catch, "tag_nearest_grid", observe)
        return (move, catch, observe)

    @property
    def num_agents(self) -> int:
        return self.config.num_taggers + self.config.num_runners

    @property
    def num_taggers(self) -> int:
        return self.config.num_taggers

    # -- what Tag tells the trainer, the reports and the benchmarks ----------------------------

    def agent_roles(self) -> dict[str, list[int]]:
        taggers = self.config.num_taggers
        return {"taggers": list(range(taggers)),
                "runners": list(range(taggers, self.num_agents))}

    def agents_in_game(self, store):
        """A tagged runner leaves the game (with runner_exits_when_tagged); taggers stay."""
        return store["in_game"] != 0

    @property
    def global_state_size(self) -> int:
        return self.num_agents * self.own_size

    def global_state(self, store):
        """Every agent's own block of its observation, side by side: place, role, in game
        and the game's own features (speed and heading in the continuous game), so the
        whole game in one row per env. Sliced from `obs` by torch on the store's device,
        not made by a kernel of its own: the own blocks are already there, written by the
        three backends' steps and held equal to the reference by the consistency check,
        so the global state is too, with no fourth copy of the game to keep in step."""
        return store[OBS][..., :self.own_size].flatten(1)

    def episode_metrics(self) -> dict[str, EpisodeMetric]:
        runners = self.config.num_runners
        return {"tags": EpisodeMetric("runners tagged per episode",
                                      lambda store: runners - store["runners_left"])}

    def frame_arrays(self) -> list[str]:
        return ["loc_x", "loc_y", "in_game"]

    def draw_frame(self, ax, frames, k: int) -> None:
        """The lessons' drawing of a Tag game (render.py), for `wd-teach play`'s video."""
        from wd_teach_envs._tag import render  # matplotlib only when a game is drawn

        field = self.game_constants()
        render.draw_frame(ax, frames, k, self.num_taggers, field["field_size"],
                          field["tagging_distance"])

    def params_for_agents(self, num_agents: int) -> dict:
        """The config's own split where it has that many agents; else one tagger for about
        ten runners, each seeing at most its nearest `num_nearest` (or all others)."""
        c = self.config
        if num_agents == self.num_agents:
            return {}
        require(num_agents >= 2, f"a Tag game needs a tagger and a runner: at least 2 agents, "
                                 f"got {num_agents}.")
        taggers = max(1, round(num_agents / (RUNNERS_PER_TAGGER + 1)))
        nearest = min(c.num_nearest or SIZED_NEAREST, num_agents - 1)
        return {"num_taggers": taggers, "num_runners": num_agents - taggers,
                "num_nearest": nearest}

    @property
    def num_neighbors(self) -> int:
        """Neighbour slots in each observation."""
        nearest = self.config.num_nearest
        return self.num_agents - 1 if nearest is None else nearest

    @property
    def own_size(self) -> int:
        """Features in the agent's own block, and in each neighbour slot."""
        return len(OWN_FEATURES) + len(self.game_features)

    def feature_names(self) -> list[str]:
        """The name of every value of an observation, in order."""
        names = [f"own {f}" for f in (*OWN_FEATURES, *self.game_features)]
        for k in range(self.num_neighbors):
            names += [f"slot {k} {f}" for f in (*SLOT_FEATURES, *self.game_features)]
        return names

    @property
    def observation_space(self) -> spaces.Box:
        size = self.own_size * (1 + self.num_neighbors)
        return spaces.Box(-1.0, 1.0, shape=(size,), dtype=np.float32)

    def initial_state(self, num_envs, rng):
        x, y = self.initial_positions(num_envs, rng)
        in_game = np.ones((num_envs, self.num_agents), np.int32)
        nearest = np.full((num_envs, self.num_agents, self.num_neighbors), -1, np.int32)
        state = {"loc_x": StateArray(x), "loc_y": StateArray(y),
                 "in_game": StateArray(in_game), "nearest": StateArray(nearest),
                 "runners_left": StateArray(np.full(num_envs, self.config.num_runners,
                                                    np.int32), per="env")}
        state.update(self.game_state(num_envs, rng))
        obs = np.zeros((num_envs, self.num_agents, self.observation_space.shape[0]), np.float32)
        arrays = {name: a.data for name, a in state.items()}
        slots = None  # the reference's observe searches for them
        if fast_floor() and torch.cuda.is_available() and self.config.num_nearest is not None:
            # Speed only: the neighbours on the GPU, the reference's slots bit for bit
            from wd_teach_envs._tag import fast

            slots = fast.initial_neighbors(x, y, in_game, self.num_neighbors)
        self._sibling("reference").observe(obs=obs, slots=slots, **self._observe_args(arrays))
        state["obs"] = StateArray(obs)
        return state

    def _observe_args(self, arrays):
        """The reference observe()'s arguments, by name, from the state and the constants
        (all but obs, and slots, which the reference finds where it is not given)."""
        observe = self._sibling("reference").observe
        values = {**arrays, **self.constants()}
        return {name: values[name] for name in inspect.signature(observe).parameters
                if name not in ("obs", "slots")}

    def constants(self):
        c = self.config
        return {"num_taggers": c.num_taggers, "num_neighbors": self.num_neighbors,
                "full_observation": int(c.num_nearest is None),
                "obs_size": self.observation_space.shape[0], "own_size": self.own_size,
                "runner_exits": int(c.runner_exits_when_tagged),
                "taggers_needed": int(c.taggers_needed),
                "tag_reward": float(c.tag_reward), "tag_penalty": float(c.tag_penalty),
                "tagger_step_reward": float(c.tagger_step_reward),
                "runner_step_reward": float(c.runner_step_reward),
                "edge_penalty": float(c.edge_penalty), "end_reward": float(c.end_reward),
                # num_nearest: the width of a row of `nearest`, what tag_nearest_grid calls
                # num_neighbors (with full observation every other agent, not the config's)
                "search_grid": int(c.search == "grid"), "num_nearest": self.num_neighbors,
                "grid_side": grid_side_for(self.num_agents), "grid_by_cell": 1,  # nearest.cu
                **self.game_constants()}

    # -- what each game says ----------------------------------------------------------------

    def initial_positions(self, num_envs: int, rng: np.random.Generator):
        """loc_x, loc_y: float32 [num_envs, num_agents]."""
        raise NotImplementedError

    def game_state(self, num_envs: int, rng: np.random.Generator) -> dict[str, StateArray]:
        return {}

    def game_constants(self) -> dict[str, int | float]:
        """field_size and tagging_distance at least."""
        raise NotImplementedError
