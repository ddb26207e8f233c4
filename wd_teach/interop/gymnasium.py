"""A single-agent env as gymnasium's vector env, and one copy of it as a gymnasium.Env.

Gymnasium's users (its wrappers, CleanRL-style training scripts, Stable-Baselines-like
loops) step `num_envs` copies through `gymnasium.vector.VectorEnv`: a batch of NumPy actions
in, NumPy observations, rewards, terminations and truncations out. GymnasiumVectorEnv is
that face of an EnvWrapper: the copies still step together on the backend's device; only
the batch crosses to and from the host, once a step.

Episodes restart as gymnasium 1.x defines (metadata["autoreset_mode"]):

    NEXT_STEP  (the default) a step that ends an episode returns its last observation; the
               next step restarts that copy, ignores its action and returns the first
               observation, reward 0, not terminated, not truncated
    SAME_STEP  the step that ends an episode restarts the copy and returns the first
               observation; the last one is in info["final_obs"] (info["_final_obs"] says
               which copies)
    DISABLED   the caller restarts ended copies: reset(options={"reset_mask": mask})

A restart restores the copy's start state made from the seed (reset(seed=...) makes new
ones). Continuous actions outside the action space are refused, not clipped: wrap the env
in gymnasium.wrappers.vector.ClipAction to clip them.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from wd_teach.env import ACTIONS, DONE
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach.interop.wrapped import as_env, check_has_agents, reseed
from wd_teach.launch import MAX_THREADS_PER_BLOCK


class GymnasiumVectorEnv(VectorEnv):
    """`num_envs` copies of a single-agent `env` (an Env, its class, a shipped name or an env
    folder's path) as a gymnasium VectorEnv. `backend` and `seed` are EnvWrapper's."""

    def __init__(self, env, num_envs: int, backend: str | None = None, *, seed: int = 0,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 check_actions: bool = True, max_threads: int = MAX_THREADS_PER_BLOCK):
        env = as_env(env)
        check_single_agent(env)
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError as err:
            raise EnvError(f"autoreset_mode {autoreset_mode!r} is not one of gymnasium's: "
                           f"{', '.join(m.value for m in AutoresetMode)}.") from err
        self.wrapper = EnvWrapper(env, num_envs, backend, seed=seed, auto_reset=False,
                                  check_actions=check_actions, max_threads=max_threads)
        self.num_envs = self.wrapper.num_envs
        self.metadata = {"autoreset_mode": mode}
        self.single_observation_space = env.observation_space
        self.single_action_space = env.action_space
        self.observation_space = batch_space(env.observation_space, self.num_envs)
        self.action_space = batch_space(env.action_space, self.num_envs)
        self._to_restart = np.zeros(self.num_envs, bool)  # ended last step (NEXT_STEP)

    @property
    def autoreset_mode(self) -> AutoresetMode:
        return self.metadata["autoreset_mode"]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Every copy back to its start (new starts from `seed`, when given), or only those
        of options["reset_mask"]: (observations, {})."""
        if seed is not None:
            reseed(self.wrapper, seed)  # checks it first, with our words
        super().reset(seed=seed)
        mask = (options or {}).get("reset_mask")
        if mask is None:
            self.wrapper.reset()
            self._to_restart[:] = False
        else:
            mask = self._check_mask(mask)
            self._restart(mask)
            self._to_restart &= ~mask
        return self._obs(), {}

    def step(self, actions):
        """One step of every copy: (observations, rewards, terminations, truncations, info)."""
        if self.autoreset_mode == AutoresetMode.DISABLED and self._to_restart.any():
            ended = np.flatnonzero(self._to_restart).tolist()
            raise EnvError(f"copies {ended[:10]} ended their episode and autoreset_mode is "
                           "DISABLED: restart them first with reset(options={'reset_mask': "
                           "mask}).")
        _, rewards, done, info = self.wrapper.step(self._actions(actions))
        rewards = rewards[:, 0].to("cpu", torch.float64, copy=True).numpy()
        truncated = info["truncated"].cpu().numpy().copy()
        terminated = done.cpu().numpy() & ~truncated
        restarted = self._to_restart.copy()
        infos: dict[str, Any] = {}
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and restarted.any():
            self._restart(restarted)  # their step is undone: they begin again
            rewards[restarted] = 0.0
            terminated[restarted] = truncated[restarted] = False
        self._to_restart = terminated | truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP and self._to_restart.any():
            final = self._obs()
            for copy in np.flatnonzero(self._to_restart):
                infos = self._add_info(infos, {"final_obs": final[copy], "final_info": {}},
                                       copy)
            self._restart(self._to_restart)
            self._to_restart[:] = False
        return self._obs(), rewards, terminated, truncated, infos

    # -- between NumPy and the store ----------------------------------------------------------

    def _actions(self, actions) -> torch.Tensor:
        """The batch of actions checked against the batched action space's shape, then as
        the store's dtype and [num_envs, 1, ...] layout."""
        array = np.asarray(actions)
        if array.shape != self.action_space.shape:
            raise EnvError(f"actions have shape {array.shape}; {self.num_envs} copies of "
                           f"{self.single_action_space} take {self.action_space.shape} "
                           f"(action_space: {self.action_space}).")
        if isinstance(self.single_action_space, gymnasium.spaces.Box):
            if not np.issubdtype(array.dtype, np.floating):
                raise EnvError(f"continuous actions must be floats, got {array.dtype}.")
        elif not np.issubdtype(array.dtype, np.integer):
            raise EnvError(f"discrete actions must be integers, got {array.dtype}.")
        array = array.astype(self.wrapper.env.action_dtype)  # int32 or float32
        return torch.from_numpy(array).reshape(self.wrapper.store[ACTIONS].shape)

    def _obs(self) -> np.ndarray:
        """The observations as a new host array (the store's change with the next step)."""
        return self.wrapper.obs[:, 0].to("cpu", copy=True).numpy()

    def _restart(self, mask: np.ndarray) -> None:
        """Restart the copies of `mask` on the device, from their start states."""
        self.wrapper.store[DONE].copy_(torch.from_numpy(mask.astype(np.int32)))
        self.wrapper.reset_done()

    def _check_mask(self, mask) -> np.ndarray:
        if not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_
                and mask.shape == (self.num_envs,)):
            raise EnvError(f"options['reset_mask'] must be a numpy bool array of shape "
                           f"({self.num_envs},), got {mask!r}.")
        return mask

    def __repr__(self) -> str:
        return (f"GymnasiumVectorEnv({type(self.wrapper.env).__name__}, num_envs="
                f"{self.num_envs}, backend {self.wrapper.backend!r}, "
                f"{self.autoreset_mode.value} autoreset)")


class GymnasiumEnv(gymnasium.Env):
    """One copy of a single-agent env as a gymnasium.Env: a GymnasiumVectorEnv of one, its
    batch of one taken apart. After an episode ends, call reset()."""

    def __init__(self, env, backend: str | None = None, *, seed: int = 0,
                 check_actions: bool = True):
        self.vector = GymnasiumVectorEnv(env, 1, backend, seed=seed, check_actions=check_actions,
                                         autoreset_mode=AutoresetMode.DISABLED)
        self.observation_space = self.vector.single_observation_space
        self.action_space = self.vector.single_action_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        obs, _ = self.vector.reset(seed=seed, options=options)
        return obs[0], {}

    def step(self, action):
        obs, rewards, terminated, truncated, _ = self.vector.step(np.asarray(action)[None])
        return obs[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]), {}

    def __repr__(self) -> str:
        return f"GymnasiumEnv({type(self.vector.wrapper.env).__name__})"


def check_single_agent(env) -> None:
    """Gymnasium's API has one agent per env; a game of several needs the TorchRL adapter."""
    check_has_agents(env)
    if env.num_agents != 1:
        raise EnvError(f"{type(env).__name__} has {env.num_agents} agents per environment, but "
                       "gymnasium's (vector) env API has one agent per environment. Use "
                       "wd_teach.interop.torchrl.TorchRLEnv, which groups agents by their "
                       "roles (pip install \"wd-teach[torchrl]\").")
