"""PettingZooEnv: one game of any multi-agent env as a PettingZoo ParallelEnv.

PettingZoo's users (its wrappers, SuperSuit, RLlib's and CleanRL's multi-agent scripts,
agent-vs-agent evaluations) step a ParallelEnv: every live agent acts at once, and each step
returns dicts keyed by agent name.

One ParallelEnv is one environment of the batch, not all of them: PettingZoo's API is one
game (`agents` is the list of who still plays it, and agents leave it one by one), so a
batch would have to be N lists of agents under one object that PettingZoo's tools do not
know how to read. Underneath it is the same EnvWrapper (of one environment) that the
trainer steps, on the same backend, so one step here is one launch of the env's kernels.
To step many games at once, use the batch directly: EnvWrapper, or TorchRLEnv
(wd_teach.interop.torchrl), which keeps the batch and groups agents by role.

Agents are named by the env's roles (`agent_roles()`), each role's name in the singular
followed by the agent's place within that role: roles "predators" and "prey" make
"predator_0", "predator_1", ..., "prey_0", ...; an env that names no roles has "agent_0",
"agent_1", .... Each agent has its role's observation and action spaces, as gymnasium
spaces: where roles see or choose different things (Env.role_observation_spaces,
Env.role_action_spaces), each agent's are its own role's; elsewhere every agent has the
env's.

An agent leaves `agents` once it is terminated or truncated, the PettingZoo way. Which
agents still play the env says through `Env.agents_in_game(store)` (a game that removes an
agent mid-episode reports it there); an env that says nothing keeps every agent until its
episode ends, and then all of them leave: terminated when the env's rules ended it,
truncated when time ran out. The store still holds a row for an agent that left: it acts 0
(for continuous actions, the point of the action space nearest 0), which its kernels
ignore as they ignore everything such an agent would do.

Observations, rewards and flags come to the host once a step, as NumPy (one copy of the
whole observation array, then one row per agent).

Needs PettingZoo: pip install "wd-teach[pettingzoo]".
"""

from __future__ import annotations

from wd_teach.interop.wrapped import missing_extra

try:
    from pettingzoo import ParallelEnv
except ImportError as err:  # an optional extra: say what to install
    raise missing_extra(err, "wd_teach.interop.pettingzoo (PettingZoo)", "pettingzoo") from err

from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from wd_teach.env import Env
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach.interop.wrapped import agent_groups, as_env, check_has_agents, reseed
from wd_teach.launch import MAX_THREADS_PER_BLOCK


class PettingZooEnv(ParallelEnv):
    """One game of `env` (an Env, its class, a shipped name or an env folder's path) as a
    PettingZoo ParallelEnv. `backend` and `seed` are EnvWrapper's; `check_actions` checks
    each step's actions against their range."""

    def __init__(self, env, backend: str | None = None, *, seed: int = 0,
                 check_actions: bool = True, max_threads: int = MAX_THREADS_PER_BLOCK):
        env = as_env(env)
        check_has_agents(env)
        self.possible_agents = agent_names(env)
        self._row = {name: row for row, name in enumerate(self.possible_agents)}
        # one space object per agent (its role's, where roles see different things, else the
        # env's): PettingZoo asks for the same object each time
        self._observation_spaces = {name: env.observation_space_of(row)
                                    for name, row in self._row.items()}
        self._obs_size = {name: int(np.prod(space.shape))
                          for name, space in self._observation_spaces.items()}
        self._action_space = env.action_space
        # and its role's action space, where roles choose from different ones
        self._action_spaces = {name: self._own_or_env(env.action_space_of(row))
                               for name, row in self._row.items()}
        self.wrapper = EnvWrapper(env, 1, backend, seed=seed, auto_reset=False,
                                  check_actions=check_actions, max_threads=max_threads)
        self.metadata = {"name": f"wd_teach_{type(env).__name__}", "render_modes": [],
                         "is_parallelizable": True}
        self.render_mode = None
        self.agents: list[str] = []  # nobody plays until reset()
        self._resting = resting_action(self._action_space, env.action_dtype)

    def _own_or_env(self, space: spaces.Space) -> spaces.Space:
        """`space`, or the env's own object where it is the env's action space."""
        return self._action_space if space == self._action_space else space

    @property
    def env(self) -> Env:
        return self.wrapper.env

    def observation_space(self, agent: str) -> spaces.Space:
        self._check_name(agent)
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        self._check_name(agent)
        return self._action_spaces[agent]

    # -- reset and step -----------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict | None = None):
        """The game back to its start (a new start from `seed`, when given), every agent in
        it: (observations, infos)."""
        if seed is not None:
            reseed(self.wrapper, seed)  # checks it first, with our words
            distinct = {id(s): s for s in self._action_spaces.values()}.values()
            for i, space in enumerate(distinct):  # sample() draws again as from this seed
                space.seed(int(seed) + i)  # (each space its own stream)
        self.wrapper.reset()
        self.agents = list(self.possible_agents)
        obs = self._observations()
        return {a: self._seen(obs, a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        """Every live agent's action, by name: (observations, rewards, terminations,
        truncations, infos), each keyed by the agents that acted. Those that ended leave
        `agents`."""
        if not self.agents:
            raise EnvError("the game is over (or was never started): no agent is left to act. "
                           "Call reset() to begin a game.")
        _, rewards, done, info = self.wrapper.step(self._actions(actions))
        acting = self.agents
        rewards = rewards[0].to("cpu", torch.float64).numpy()
        over, time_up = bool(done[0]), bool(info["truncated"][0])
        playing = self.env.agents_in_game(self.wrapper.store)
        playing = None if playing is None else playing[0].cpu().numpy()
        terminated, truncated = {}, {}
        for agent in acting:
            left = playing is not None and not playing[self._row[agent]]
            terminated[agent] = bool(left or (over and not time_up))
            truncated[agent] = bool(time_up and not terminated[agent])
        obs = self._observations()
        self.agents = [a for a in acting if not (terminated[a] or truncated[a])]
        return ({a: self._seen(obs, a) for a in acting},
                {a: float(rewards[self._row[a]]) for a in acting},
                terminated, truncated, {a: {} for a in acting})

    def _seen(self, obs: np.ndarray, agent: str) -> np.ndarray:
        """`agent`'s observation: its row of the store's, its role's columns."""
        return obs[self._row[agent], :self._obs_size[agent]]

    def state(self) -> np.ndarray:
        """The whole game as one array: every agent's observation, in agent order."""
        return self._observations().reshape(-1)

    def close(self) -> None:
        """Nothing to let go: the store's tensors go with this object."""

    # -- between dicts and the store ------------------------------------------------------------

    def _actions(self, actions: dict[str, Any]) -> torch.Tensor:
        """The dict of actions checked (every live agent, no other, each of its space's shape
        and kind) and laid out as the store's [1, num_agents, ...]; agents that left rest."""
        if not isinstance(actions, dict):
            raise EnvError(f"actions must be a dict of agent name -> action, got "
                           f"{type(actions).__name__}.")
        extra = sorted(set(actions) - set(self.agents), key=str)
        if extra:
            self._check_name(extra[0])
            raise EnvError(f"{extra[0]!r} is no longer in the game and cannot act: give "
                           f"actions only for env.agents ({len(self.agents)} left).")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise EnvError(f"no action for {', '.join(missing[:5])}: every agent in "
                           "env.agents acts each step.")
        shape = (1, len(self.possible_agents), *self._resting.shape)
        batch = np.broadcast_to(self._resting, shape).copy()
        for agent, action in actions.items():
            batch[0, self._row[agent]] = self._checked(agent, action)
        return torch.from_numpy(batch)

    def _checked(self, agent: str, action) -> np.ndarray:
        array = np.asarray(action)
        space = self._action_spaces[agent]
        if array.shape != space.shape:
            raise EnvError(f"the action of {agent!r} has shape {array.shape}; its action space "
                           f"{space} takes {space.shape}.")
        if isinstance(space, spaces.Box):
            if not np.issubdtype(array.dtype, np.floating):
                raise EnvError(f"the action of {agent!r} must be floats (continuous), got "
                               f"{array.dtype}.")
        elif not np.issubdtype(array.dtype, np.integer):
            raise EnvError(f"the action of {agent!r} must be integers (discrete), got "
                           f"{array.dtype}.")
        elif space is not self._action_space and not space.contains(array.astype(space.dtype)):
            raise EnvError(f"the action of {agent!r} is {array.tolist()}, outside its role's "
                           f"action space {space}.")
        return array

    def _observations(self) -> np.ndarray:
        """Every agent's observation as a new host array (the store's changes each step)."""
        return self.wrapper.obs[0].to("cpu", copy=True).numpy()

    def _check_name(self, agent) -> None:
        if agent not in self._row:
            raise EnvError(f"no agent named {agent!r} in this game. Agents: "
                           f"{', '.join(self.possible_agents[:6])}"
                           f"{', ...' if len(self.possible_agents) > 6 else ''}.")

    def __repr__(self) -> str:
        return (f"PettingZooEnv({type(self.env).__name__}, {len(self.possible_agents)} agents, "
                f"backend {self.wrapper.backend!r})")


def agent_names(env: Env) -> list[str]:
    """Every agent's name, in the store's agent order: its role in the singular and its
    place within that role (one role of all, "agent", when the env names none)."""
    names: dict[int, str] = {}
    for role, agents in agent_groups(env).items():
        for place, agent in enumerate(agents):
            names[agent] = f"{singular(role)}_{place}"
    ordered = [names[agent] for agent in range(env.num_agents)]
    if len(set(ordered)) != len(ordered):
        raise EnvError(f"{type(env).__name__}.agent_roles() has roles whose singulars are the "
                       f"same ({', '.join(agent_groups(env))}), so two agents would share a "
                       "name. Give the roles distinct names.")
    return ordered


def singular(role: str) -> str:
    """A role's name for one of its agents: a plural's trailing s dropped ("agents" ->
    "agent"); other names as they are."""
    return role[:-1] if len(role) > 1 and role.endswith("s") and not role.endswith("ss") else role


def resting_action(space: spaces.Space, dtype: np.dtype) -> np.ndarray:
    """What an agent that left the game is given: 0, or for continuous actions the point
    of the space nearest 0."""
    if isinstance(space, spaces.Box):
        return np.clip(np.zeros(space.shape, dtype), space.low, space.high).astype(dtype)
    return np.zeros(space.shape, dtype)
