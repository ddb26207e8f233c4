"""EnvWrapper: `reset()` and `step(actions)` over every copy of an environment, on the device.

The wrapper is the gym-like face of the layers below: it pushes an env's initial state into a
DataStore once, binds the env's step (PyCUDA kernels, Numba kernels, or the NumPy reference)
to the store's arrays by name, and after each step resets the environments whose episode
ended, on the device (wd_teach.reset.reset.Resetter), so a rollout never waits for the host.
What `step` returns are the store's own tensors: nothing is copied, so they change with the
next step (clone what you keep).

Backends: 'pycuda' and 'numba' run the env's kernels on the GPU (Numba also on the CUDA
simulator); 'numpy' runs its reference step on the CPU, the baseline the kernels are
measured and checked against. The backend is chosen once (wd_teach.backends.get) and the
same object goes to the launcher and the resetter; the wrapper asks it where the store
lives, whether it runs kernels and which kernels to load, and never compares its name.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch
from gymnasium import spaces

from wd_teach import backends, seat_memory
from wd_teach.data import DataStore
from wd_teach.env import ACTIONS, DONE, OBS, REWARDS, TIMESTEP, Env
from wd_teach.errors import EnvError, TooLargeError
from wd_teach.floors import fast_floor
from wd_teach.launch import MAX_THREADS_PER_BLOCK, KernelLauncher, launch_geometry
from wd_teach.ranges import require_whole
from wd_teach.reset.reference import ReferenceResetter
from wd_teach.reset.reset import Resetter
from wd_teach.timing import time_calls

INT32_MAX = np.iinfo(np.int32).max


def _check_one_block(env: Env, geometry) -> None:
    """An env whose kernels hold its agents together with a barrier (one_block_per_env)
    cannot be split over blocks: a barrier waits only for its own block's threads, so the
    agents of the other block would be read half-written. Refused before any GPU work."""
    if env.one_block_per_env and env.step_threads:
        raise EnvError(f"{type(env).__name__} holds each environment in one block "
                       f"(one_block_per_env), so its step_threads cannot split "
                       f"{', '.join(env.step_threads)} over smaller blocks: declare one or "
                       "the other.")
    blocks = geometry.grid[1]
    if env.one_block_per_env and blocks > 1:
        raise EnvError(
            f"{type(env).__name__}'s agents interact inside a step (one_block_per_env), so "
            f"each environment must run in one block; {env.num_agents:,} agents at "
            f"{geometry.block[0]} threads per block would take {blocks} blocks. Use at most "
            f"{MAX_THREADS_PER_BLOCK} agents per environment and max_threads >= num_agents.")


class EnvWrapper:
    """`num_envs` copies of `env`, stepped together on one backend.

    `seed` makes the initial states (each copy its own). `auto_reset` resets finished
    environments after each step. `check_actions` checks every action's range before a step:
    for actions already on the GPU that costs one synchronisation per step, so a training
    loop whose actions come from the sampler (always in range) turns it off. Shape, dtype
    and device are always checked: that costs nothing.
    """

    def __init__(self, env: Env, num_envs: int, backend=None, *, seed: int = 0,
                 auto_reset: bool = True, check_actions: bool = True,
                 max_threads: int = MAX_THREADS_PER_BLOCK):
        if not isinstance(env, Env):
            raise EnvError(f"EnvWrapper wraps a wd_teach Env, got {type(env).__name__}.")
        num_envs, seed, max_threads = _check_numbers(num_envs, seed, max_threads)
        self.env = env
        self.backend = backends.get(backend)  # a name or a backend; chosen here, once
        self.auto_reset = bool(auto_reset)
        self.check_actions = bool(check_actions)
        device = self.backend.device()
        geometry = launch_geometry(num_envs, env.num_agents, max_threads)  # say it now
        _check_one_block(env, geometry)
        _check_size(env, num_envs, device)  # before the host makes arrays that cannot fit
        state = env.full_state(num_envs, seed)
        self.store = DataStore(num_envs, env.num_agents, env.episode_length, device=device)
        for name, array in state.items():
            self.store.push(name, array.data, per=array.per, reset=array.reset,
                            allow_nonfinite=array.allow_nonfinite)
        for name, value in env.constants().items():
            self.store.set_constant(name, value)

        if self.backend.runs_kernels:
            self.launcher = KernelLauncher(self.store, self.backend, max_threads)
            self._load_kernels()
            #: What one step launches, in order: (kernel, grid, block), None for the
            #: launcher's own geometry. Behind the fast door a twin may take a step
            #: kernel's place, with its own blocks (Env.fast_kernels).
            self.step_launches = self._plan_launches(max_threads)
            self._resetter = Resetter(self.store, backend=self.backend, max_threads=max_threads)
        else:  # the NumPy reference: the env's step and the reset's twin, on the CPU
            self._reference = env.reference_step()
            self._reference_args = _bind_reference(self._reference, self.store)
            self._resetter = ReferenceResetter(self.store, done=DONE)

        device = self.store.device
        self._done = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self._truncated = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.generator = torch.Generator(device=device).manual_seed(seed)
        space = env.action_space
        if isinstance(space, spaces.Box):
            self._low = torch.as_tensor(space.low, device=device)
            self._high = torch.as_tensor(space.high, device=device)
        else:
            counts = space.nvec if isinstance(space, spaces.MultiDiscrete) else [space.n]
            self._counts = torch.as_tensor(np.asarray(counts, np.int32), device=device)

    # -- what it holds ----------------------------------------------------------------------

    @property
    def num_envs(self) -> int:
        return self.store.num_envs

    @property
    def num_agents(self) -> int:
        return self.store.num_agents

    @property
    def device(self) -> torch.device:
        return self.store.device

    @property
    def observation_space(self) -> spaces.Box:
        """One agent's observation; `obs` is [num_envs, num_agents, *this shape]."""
        return self.env.observation_space

    @property
    def action_space(self) -> spaces.Space:
        """One agent's action; `step` takes [num_envs, num_agents, ...] of them."""
        return self.env.action_space

    @property
    def obs(self) -> torch.Tensor:
        return self.store[OBS]

    @property
    def rewards(self) -> torch.Tensor:
        return self.store[REWARDS]

    @property
    def info(self) -> dict[str, torch.Tensor]:
        """`truncated`: the episode ended because time ran out (timestep reached
        episode_length), not by the env's rules; a value estimate can bootstrap there."""
        return {"truncated": self._truncated}

    # -- reset and step ---------------------------------------------------------------------

    def reset(self) -> torch.Tensor:
        """Every environment back to its initial state (device copies only); the first obs."""
        self.store.restore()
        self.store[DONE].zero_()
        self._done.zero_()
        self._truncated.zero_()
        return self.obs

    def step(self, actions=None):
        """One step of every environment: (obs, rewards, done, info), tensors on the device.

        `actions` is [num_envs, num_agents] (one discrete head), [.., heads] (several) or
        [.., size] (continuous); None steps with what is in the store's `actions` already
        (a sampler writes it there). Environments whose episode ended are reset afterwards
        when `auto_reset` is on: their obs is then the next episode's first, and `done`
        says which they were.
        """
        if actions is not None:
            self.put_actions(actions)
        if self.backend.runs_kernels:
            for kernel, grid, block in self.step_launches:
                self.launcher.launch(kernel, grid=grid, block=block)
        else:
            self._reference(**self._reference_args)
        done = self.store[DONE]
        torch.ne(done, 0, out=self._done)  # kept here: the reset lowers the store's flags
        torch.ge(self.store[TIMESTEP], self.env.episode_length, out=self._truncated)
        self._truncated &= self._done
        if self.auto_reset:
            self.reset_done()
        return self.obs, self.rewards, self._done, self.info

    def reset_done(self) -> None:
        """Reset only the environments whose done flag is up, on their own device."""
        self._resetter.reset()

    # -- actions ----------------------------------------------------------------------------

    def put_actions(self, actions) -> None:
        """Check `actions` at the door and copy them into the store's `actions`."""
        target = self.store[ACTIONS]
        if isinstance(actions, torch.Tensor) and actions.data_ptr() == target.data_ptr():
            if self.check_actions:
                self._check_range(target)
            return  # written in place (by a sampler, say): nothing to copy
        tensor = self._as_tensor(actions)
        self._check_shape_and_dtype(tensor)
        if tensor.device != target.device and tensor.device.type != "cpu":
            raise EnvError(f"actions are on {tensor.device}, the environments on "
                           f"{target.device}. Make them where the store is "
                           f"(device={str(target.device)!r}).")
        if self.check_actions or tensor.device.type == "cpu":
            self._check_range(tensor)  # host actions cost nothing to check
        target.copy_(tensor)

    def random_actions(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """Uniformly random actions for every agent, made on the store's device."""
        generator = generator or self.generator
        shape, device = self.env.action_shape(self.num_envs), self.device
        if isinstance(self.action_space, spaces.Box):
            uniform = torch.rand(shape, generator=generator, device=device)
            return self._low + (self._high - self._low) * uniform
        if isinstance(self.action_space, spaces.Discrete):
            return torch.randint(int(self.action_space.n), shape, generator=generator,
                                 device=device, dtype=torch.int32)
        heads = [torch.randint(int(n), shape[:-1], generator=generator, device=device,
                               dtype=torch.int32) for n in self.action_space.nvec]
        return torch.stack(heads, dim=-1)

    def _as_tensor(self, actions) -> torch.Tensor:
        if isinstance(actions, np.ndarray):
            return torch.from_numpy(actions)
        if isinstance(actions, torch.Tensor):
            return actions
        raise EnvError(f"actions must be a torch tensor or a numpy array, got "
                       f"{type(actions).__name__}.")

    def _check_shape_and_dtype(self, tensor: torch.Tensor) -> None:
        want_shape = self.env.action_shape(self.num_envs)
        if tuple(tensor.shape) != want_shape:
            raise EnvError(f"actions have shape {tuple(tensor.shape)}, but {self.num_envs} "
                           f"envs of {self.num_agents} agents with action space "
                           f"{self.action_space} take {want_shape}.")
        want_dtype = self.store[ACTIONS].dtype
        if tensor.dtype != want_dtype:
            kind = "integers" if want_dtype == torch.int32 else "floats"
            raise EnvError(f"actions are {tensor.dtype}, but the kernels read {kind} as "
                           f"{want_dtype}: convert with .to({want_dtype}) (numpy: "
                           f".astype(np.{str(want_dtype).removeprefix('torch.')})).")

    def _check_range(self, tensor: torch.Tensor) -> None:
        """One synchronisation: whether any action is out of range comes back to the host."""
        if isinstance(self.action_space, spaces.Box):
            low, high = self._low.to(tensor.device), self._high.to(tensor.device)
            bad = ~torch.isfinite(tensor) | (tensor < low) | (tensor > high)
        else:
            heads = tensor if tensor.dim() == 3 else tensor.unsqueeze(-1)
            bad = (heads < 0) | (heads >= self._counts.to(tensor.device))
        if not bool(bad.any()):
            return
        where = tuple(int(i) for i in bad.nonzero()[0])
        value = (tensor if tensor.dim() == len(where) else tensor.unsqueeze(-1))[where].item()
        place = f"env {where[0]}, agent {where[1]}"
        if isinstance(self.action_space, spaces.Box):
            low, high = self._low[where[2]].item(), self._high[where[2]].item()
            raise EnvError(f"action {value} of {place} is outside [{low:g}, {high:g}]. Clip "
                           "continuous actions first: torch.clamp(actions, low, high).")
        head = where[2] if len(where) > 2 else 0
        count = int(self._counts[head])
        name = f"head {head} " if len(self._counts) > 1 else ""
        raise EnvError(f"action {value} of {place} is out of range: {name}has {count} "
                       f"actions, 0 to {count - 1}.")

    # -- kernels ----------------------------------------------------------------------------

    def _load_kernels(self) -> None:
        for kernels, include_dirs in self.backend.env_kernels(self.env):
            self.launcher.load(kernels, include_dirs=include_dirs)
        missing = [k for k in self.env.step_kernels if k not in self.launcher.kernel_names]
        if missing:
            raise EnvError(f"{type(self.env).__name__}.step_kernels names "
                           f"{', '.join(missing)}, which its {self.backend} source does not "
                           f"define. Defined: {', '.join(self.launcher.kernel_names)}.")

    def _plan_launches(self, max_threads: int) -> list[tuple[str, tuple | None, tuple | None]]:
        """The step's kernels, each plain one replaced by its fast twin where the fast floor
        is on for this device and the env has a twin that fits the game. A backend may run
        the plain kernels only (the exercises' CPU runner of CUDA C does)."""
        plan = [self._launch_of(kernel, max_threads) for kernel in self.env.step_kernels]
        if not fast_floor(self.store.device):
            return plan
        twins = {t.replaces: t for t in self.env.fast_kernels() if t.threads > 0}
        for at, (kernel, _, _) in enumerate(plan):
            twin = twins.get(kernel)
            load = None if twin is None else self.backend.twin_kernels(self.env, twin)
            if load is None:
                continue
            self.launcher.load(load[0], include_dirs=load[1])
            geometry = launch_geometry(self.num_envs, self.num_agents,
                                       min(twin.threads, max_threads))
            plan[at] = (twin.name, geometry.grid, geometry.block)
        return plan

    def _launch_of(self, kernel: str, max_threads: int) -> tuple[str, tuple | None,
                                                                 tuple | None]:
        """(kernel, grid, block): the launcher's geometry (None), or the env's own block
        size for this kernel (Env.step_threads)."""
        threads = self.env.step_threads.get(kernel)
        if threads is None or threads >= min(self.num_agents, max_threads):
            return (kernel, None, None)
        geometry = launch_geometry(self.num_envs, self.num_agents, threads)
        return (kernel, geometry.grid, geometry.block)

    def __repr__(self) -> str:
        return (f"EnvWrapper({type(self.env).__name__}, {self.num_envs} envs x "
                f"{self.num_agents} agents, backend {self.backend!r}, on {self.device})")


def steps_per_second(wrapper: EnvWrapper, steps: int, warmup: int = 2) -> float:
    """Environment steps per second (num_envs steps each call), measured over `steps`
    calls of `wrapper.step()` with one fixed set of random actions, from the first call's
    start to the last call's end on the device (wd_teach.timing)."""
    wrapper.put_actions(wrapper.random_actions())
    timed = time_calls(wrapper.step, steps, warmup, wrapper.device)
    return steps * wrapper.num_envs / timed.total


def _bind_reference(step, store: DataStore) -> dict:
    """The reference step's arguments, by parameter name: NumPy views of the store's (CPU)
    tensors, which share their memory, so the step writes straight into the store."""
    args = {}
    for name in inspect.signature(step).parameters:
        if name in store.names:
            args[name] = store[name].numpy()
        elif name in store.constants:
            args[name] = store.constant(name)
        else:
            raise EnvError(f"the reference step needs {name!r}, but the store has no array or "
                           f"constant of that name. Arrays: {', '.join(store.names)}; "
                           f"constants: {', '.join(store.constants)}.")
    return args


def _check_numbers(num_envs, seed, max_threads) -> tuple[int, int, int]:
    """The wrapper's numbers, checked at the door: a string or a float here would fail far
    below, in a comparison or in numpy, in words that name neither the wrapper nor the
    argument."""
    return (require_whole("EnvWrapper: num_envs", num_envs, low=1, high=INT32_MAX + 1,
                          error=EnvError),
            require_whole("EnvWrapper: seed", seed, low=0, high=2**64, error=EnvError),
            require_whole("EnvWrapper: max_threads", max_threads, low=1,
                          high=MAX_THREADS_PER_BLOCK + 1, error=EnvError))


def _check_size(env: Env, num_envs: int, device: torch.device) -> None:
    """Refuse, before anything is made, arrays that kernels cannot index with int (2**31
    elements) or that do not fit the GPU's free memory (with their pristine copies). The
    sizes are worked out from the state of one environment."""
    one = env.full_state(1)
    for name, array in one.items():
        size = array.data.size * (1 if array.per == "shared" else num_envs)
        if size > INT32_MAX:
            raise TooLargeError(f"{name!r} would hold {size:,} values, more than the "
                                f"{INT32_MAX:,} that kernels index with int. Use fewer envs "
                                "or agents.")
    if device.type != "cuda":
        return
    what = f"{num_envs:,} envs of {env.num_agents:,} agents"
    seat_memory.require_room(state_bytes(env, num_envs, one), what, device,
                             fewer="Use fewer envs or agents.")


def state_bytes(env: Env, num_envs: int, one: dict | None = None) -> int:
    """Bytes the store of `num_envs` envs holds on the device, pristine copies included,
    worked out from the state of one environment (`one`, when already made)."""
    one = env.full_state(1) if one is None else one
    return sum(a.data.nbytes * (1 if a.per == "shared" else num_envs) * (2 if a.reset else 1)
               for a in one.values())
