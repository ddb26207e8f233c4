"""TorchRLEnv: any wd-teach env as a TorchRL EnvBase, on its own device.

TorchRL's collectors, transforms, losses and replay buffers all take an EnvBase: data in and
out as TensorDicts, described by specs. This adapter presents an EnvWrapper that way, with
batch_size [num_envs] and the agents grouped as TorchRL's multi-agent envs (VMAS,
PettingZoo) group them, by the env's own `agent_roles()` (one group, "agents", when it names
none):

    (group, "observation")   [num_envs, agents in group, *obs shape]
    (group, "action")        [num_envs, agents in group]            one discrete head
                             [num_envs, agents in group, heads]     several
                             [num_envs, agents in group, size]      continuous
    (group, "reward")        [num_envs, agents in group, 1]
    "done", "terminated", "truncated"            [num_envs, 1], and the same per group
                                                 [num_envs, agents in group, 1]

Nothing leaves the device: actions are written into the store's own `actions` tensor, the
kernels step, and each step's results are copied once, on the device, into the TensorDict
returned (TorchRL keeps every step's TensorDict, while the store overwrites its tensors in
place). Episodes end as TorchRL expects: a step returns the episode's last observation, and
TorchRL's partial reset (`_reset` per environment) restores those environments on the
device. `truncated` is an episode cut by the time limit; `terminated` one ended by the
env's rules.

Needs TorchRL: pip install "wd-teach[torchrl]".
"""

from __future__ import annotations

from wd_teach.interop.wrapped import missing_extra

try:
    from tensordict import TensorDict, TensorDictBase
    from torchrl.data import Bounded, Categorical, Composite, MultiCategorical, Unbounded
    from torchrl.envs import EnvBase
except ImportError as err:  # an optional extra: say what to install
    raise missing_extra(err, "wd_teach.interop.torchrl (TorchRL and tensordict)",
                        "torchrl") from err

import numpy as np
import torch
from gymnasium import spaces

from wd_teach import backends
from wd_teach.env import ACTIONS, DONE, Env, action_counts
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach.interop.wrapped import (
    agent_groups,
    as_env,
    check_device,
    check_has_agents,
    reseed,
)
from wd_teach.launch import MAX_THREADS_PER_BLOCK

#: The done entries, at the root and in every group.
DONE_KEYS = ("done", "terminated", "truncated")
#: Names a group may not take: they are keys of the root TensorDict already.
RESERVED = {*DONE_KEYS, "_reset", "next", "action", "observation", "reward"}


class TorchRLEnv(EnvBase):
    """`num_envs` copies of `env` as one TorchRL env; `env` is an Env, its class, a shipped
    name or an env folder's path.

    `backend` and `seed` are EnvWrapper's; `device`, when given, must be where that backend
    keeps its envs (checked, never moved). `group_map` overrides the env's roles: group name
    -> agent indices, every agent in exactly one group. `check_actions` checks each step's
    actions against their range (on a GPU, one synchronisation a step).
    """

    def __init__(self, env, num_envs: int, backend: str | None = None, *, seed: int = 0,
                 device=None, group_map: dict[str, list[int]] | None = None,
                 check_actions: bool = True, max_threads: int = MAX_THREADS_PER_BLOCK):
        env = as_env(env)
        check_has_agents(env)
        groups = agent_groups(env, group_map, reserved=RESERVED)
        _check_spaces(env)
        backend = backends.get(backend)  # chosen once: the device check and the wrapper
        check_device(device, backend)
        self.wrapper = EnvWrapper(env, num_envs, backend, seed=seed, auto_reset=False,
                                  check_actions=check_actions, max_threads=max_threads)
        # the store's own tensors say where they are: "cuda:0", where the store says "cuda"
        super().__init__(device=self.wrapper.obs.device, batch_size=torch.Size([num_envs]))
        self.group_map = groups  # name -> agent indices, as TorchRL's multi-agent envs name it
        self._index = {name: _index(agents, self.device) for name, agents in groups.items()}
        self._make_specs()

    @property
    def env(self) -> Env:
        return self.wrapper.env

    # -- specs, from the env's gymnasium spaces ----------------------------------------------

    def _make_specs(self) -> None:
        batch, device, env = self.batch_size, self.device, self.env
        observation, action, reward = ({} for _ in range(3))
        done = {key: _flags((*batch, 1), device) for key in DONE_KEYS}
        for name, agents in self.group_map.items():
            lead = (*batch, len(agents))
            observation[name] = Composite(
                observation=_observation_spec(env.observation_space, lead, device), shape=lead)
            action[name] = Composite(
                action=_group_action_spec(env, agents, lead, device), shape=lead)
            reward[name] = Composite(
                reward=Unbounded((*lead, 1), dtype=torch.float32, device=device), shape=lead)
            done[name] = Composite({key: _flags((*lead, 1), device) for key in DONE_KEYS},
                                   shape=lead)
        self.full_observation_spec = Composite(observation, shape=batch, device=device)
        self.full_action_spec = Composite(action, shape=batch, device=device)
        self.full_reward_spec = Composite(reward, shape=batch, device=device)
        self.full_done_spec = Composite(done, shape=batch, device=device)

    # -- reset and step -----------------------------------------------------------------------

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        """All environments back to their start, or only those TorchRL marks `_reset`."""
        mask = self._reset_mask(tensordict)
        if mask is None:
            self.wrapper.reset()
        else:
            self.wrapper.store[DONE].copy_(mask)
            self.wrapper.reset_done()
        flags = torch.zeros(self.batch_size, dtype=torch.bool, device=self.device)
        return self._output(flags, flags, rewards=None)

    def _reset_mask(self, tensordict: TensorDictBase | None) -> torch.Tensor | None:
        """Which environments a partial reset restores, [num_envs]; None for all. Agents of
        one environment live and restart together, so a group's mask resets its env."""
        if tensordict is None:
            return None
        masks = [tensordict.get(key, None) for key in
                 ["_reset", *((name, "_reset") for name in self.group_map)]]
        masks = [m.reshape(self.batch_size[0], -1).any(-1) for m in masks if m is not None]
        if not masks:
            return None
        return torch.stack(masks).any(0)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        actions = self.wrapper.store[ACTIONS]
        for name, index in self._index.items():
            actions[:, index] = tensordict.get((name, "action")).to(actions.dtype)
        _, rewards, done, info = self.wrapper.step(actions)  # checked where it lies
        return self._output(done, info["truncated"], rewards)

    def _output(self, done: torch.Tensor, truncated: torch.Tensor,
                rewards: torch.Tensor | None) -> TensorDictBase:
        """A fresh TensorDict of the store's results: copied once, on the device."""
        flags = {"done": done.unsqueeze(-1).clone(), "truncated": truncated.unsqueeze(-1).clone(),
                 "terminated": (done & ~truncated).unsqueeze(-1)}
        out = TensorDict(dict(flags), batch_size=self.batch_size, device=self.device)
        obs = self.wrapper.obs
        for name, index in self._index.items():
            lead = (*self.batch_size, len(self.group_map[name]))
            group = {"observation": _take(obs, index)}
            if rewards is not None:
                group["reward"] = _take(rewards, index).unsqueeze(-1)
            group.update({key: flag.unsqueeze(1).expand(*lead, 1).clone()
                          for key, flag in flags.items()})
            out.set(name, TensorDict(group, batch_size=lead, device=self.device))
        return out

    def _set_seed(self, seed: int | None) -> None:
        """New start states from `seed` (None keeps the current ones); they begin at the next
        reset."""
        if seed is not None:
            reseed(self.wrapper, seed)

    def __repr__(self) -> str:
        groups = ", ".join(f"{name}: {len(agents)}" for name, agents in self.group_map.items())
        return (f"TorchRLEnv({type(self.env).__name__}, {self.batch_size[0]} envs, groups "
                f"{{{groups}}}, backend {self.wrapper.backend!r}, on {self.device})")


# -- groups -------------------------------------------------------------------------------------


def _index(agents: list[int], device: torch.device):
    """A slice for a run of consecutive agents (the store's rows, viewed without a copy),
    otherwise an index tensor."""
    if agents == list(range(agents[0], agents[0] + len(agents))):
        return slice(agents[0], agents[0] + len(agents))
    return torch.as_tensor(agents, dtype=torch.long, device=device)


def _take(tensor: torch.Tensor, index) -> torch.Tensor:
    """The group's rows of a [num_envs, num_agents, ...] tensor, as a new tensor."""
    if isinstance(index, slice):
        return tensor[:, index].clone()
    return tensor.index_select(1, index)


# -- specs from gymnasium spaces ------------------------------------------------------------------


def _check_spaces(env: Env) -> None:
    if not isinstance(env.observation_space, spaces.Box):
        raise EnvError(f"{type(env).__name__}.observation_space is "
                       f"{type(env.observation_space).__name__}; the env contract (and this "
                       "adapter) takes a Box.")
    if not isinstance(env.action_space, (spaces.Discrete, spaces.MultiDiscrete, spaces.Box)):
        raise EnvError(f"{type(env).__name__}.action_space is "
                       f"{type(env.action_space).__name__}; the env contract (and this "
                       "adapter) takes Discrete, MultiDiscrete or a 1-D Box.")


def _observation_spec(space: spaces.Box, lead: tuple, device):
    shape = (*lead, *space.shape)
    if np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)):
        low, high = (torch.as_tensor(b, device=device).expand(shape)
                     for b in (space.low, space.high))
        return Bounded(low, high, shape, dtype=torch.float32, device=device)
    return Unbounded(shape, dtype=torch.float32, device=device)


def _group_action_spec(env: Env, agents, lead: tuple, device):
    """A group's action spec: its agents' space, or, where they are of roles that choose
    from different ones (Env.role_action_spaces), the env's widest with a mask of each
    agent's own choices (TorchRL's masked specs: rand() and is_in() honour it; step() checks
    actions against the env's widest range only, as the kernels need)."""
    own = [env.action_space_of(agent) for agent in agents]
    if all(space == own[0] for space in own):
        return _action_spec(own[0], lead, device)
    widest = env.action_space
    mask = torch.zeros((*lead, sum(action_counts(widest))), dtype=torch.bool, device=device)
    for i, space in enumerate(own):
        start = 0
        for mine, width in zip(action_counts(space), action_counts(widest), strict=True):
            mask[..., i, start:start + mine] = True
            start += width
    spec = _action_spec(widest, lead, device)
    spec.update_mask(mask)
    return spec


def _action_spec(space: spaces.Space, lead: tuple, device):
    """Integer actions as int64, TorchRL's and torch.distributions' own (the store's int32
    takes them in the copy it makes anyway); continuous ones as float32."""
    if isinstance(space, spaces.Discrete):
        return Categorical(int(space.n), lead, dtype=torch.int64, device=device)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = torch.as_tensor(np.asarray(space.nvec, np.int64), device=device)
        return MultiCategorical(nvec, (*lead, len(space.nvec)), dtype=torch.int64,
                                device=device)
    shape = (*lead, *space.shape)
    low, high = (torch.as_tensor(b, device=device).expand(shape) for b in (space.low, space.high))
    return Bounded(low, high, shape, dtype=torch.float32, device=device)


def _flags(shape: tuple, device):
    return Categorical(2, shape, dtype=torch.bool, device=device)
