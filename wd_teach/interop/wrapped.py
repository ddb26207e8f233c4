"""What the adapters share: the env they wrap, from whatever names it, and new start states.

An EnvWrapper's resets restore each environment to the start state made from its seed at
construction, so an adapter whose library seeds the env later (TorchRL's `set_seed`,
gymnasium's `reset(seed=...)`) makes the start states again from the new seed and writes
them over the pristine copies: one host-to-device copy per seed, then every reset restores
the new ones on the device as before.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from wd_teach import backends
from wd_teach.env import Env
from wd_teach.env.registry import find_env, known_envs
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError, MissingPieceError

#: The group of every agent of an env that names no roles (TorchRL's name for it too).
ALL_AGENTS = "agents"


class MissingExtraError(MissingPieceError, ModuleNotFoundError):
    """A package of an optional extra is not installed. A MissingPieceError, and also the
    ModuleNotFoundError that Python raises for a missing module (with its `name`), so that
    code which passes over the modules of extras it lacks passes over this one too."""


def missing_extra(err: ImportError, what: str, extra: str) -> MissingExtraError:
    """The error for a module of `what` that needs the extra `extra`, which is missing."""
    error = MissingExtraError(f"{what} needs the extra {extra!r}, which is not installed "
                              f"({err}). Install it with: pip install \"wd-teach[{extra}]\"")
    error.name = err.name
    return error


def as_env(env) -> Env:
    """The Env that `env` names: an Env object, an Env class (at its defaults), a shipped or
    installed env's name, or the path of an env folder."""
    if isinstance(env, Env):
        return env
    if isinstance(env, type) and issubclass(env, Env):
        return env()
    if isinstance(env, (str, Path)):
        return find_env(env).env_class()
    raise EnvError(f"expected a wd_teach Env (an object, a class, a name or an env folder's "
                   f"path), got {type(env).__name__}. Known names: {', '.join(known_envs())}.")


def check_has_agents(env: Env) -> None:
    """An env of no agents has nothing to observe or act: refused before anything is made."""
    if not isinstance(env.num_agents, (int, np.integer)) or env.num_agents < 1:
        raise EnvError(f"{type(env).__name__} has {env.num_agents!r} agents per environment; "
                       "an adapter needs at least one. Check its config (e.g. num_agents).")


def agent_groups(env: Env, group_map: dict[str, list[int]] | None = None, *,
                 reserved=frozenset()) -> dict[str, list]:
    """The groups of `env`'s agents: `group_map` if given, else the env's roles, else one
    group of all. Every agent must be in exactly one group, so that each action is written
    once and each reward read once. `reserved`: names the adapter's library keeps."""
    groups = group_map if group_map is not None else env.agent_roles()
    if not groups:
        return {ALL_AGENTS: list(range(env.num_agents))}
    where = "group_map" if group_map is not None else f"{type(env).__name__}.agent_roles()"
    if not isinstance(groups, dict):
        raise EnvError(f"{where} must be a dict of group name -> agent indices, got "
                       f"{type(groups).__name__}.")
    seen: dict[int, str] = {}
    for name, agents in groups.items():
        if not isinstance(name, str) or not name.isidentifier() or name in reserved:
            raise EnvError(f"{where}: group name {name!r} cannot be used: give a plain name "
                           f"(letters, digits, _){_other_than(reserved)}.")
        if len(agents) == 0:
            raise EnvError(f"{where}: group {name!r} has no agents. Leave it out.")
        for agent in agents:
            if not isinstance(agent, (int, np.integer)) or not 0 <= agent < env.num_agents:
                raise EnvError(f"{where}: group {name!r} names agent {agent!r}, but the agents "
                               f"are 0 to {env.num_agents - 1}.")
            if agent in seen:
                raise EnvError(f"{where}: agent {agent} is in both {seen[agent]!r} and "
                               f"{name!r}; each agent must be in exactly one group.")
            seen[int(agent)] = name
    missing = sorted(set(range(env.num_agents)) - set(seen))
    if missing:
        raise EnvError(f"{where}: agents {missing[:10]} are in no group; every agent must be "
                       "in one. Pass group_map= to the adapter to group them yourself.")
    return {name: [int(a) for a in agents] for name, agents in groups.items()}


def _other_than(reserved) -> str:
    return f" other than {', '.join(sorted(reserved))}" if reserved else ""


def wrapper_device(backend: str | None) -> torch.device:
    """Where an EnvWrapper on `backend` keeps its store (as EnvWrapper decides it), with the
    GPU's index: a store on "cuda" lives on the current GPU."""
    device = backends.get(backend).device()  # an unknown or unavailable one says so here
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def check_device(device, backend: str | None) -> None:
    """A `device` that the backend's store would not live on is refused, before any work:
    the envs step where their backend runs, and an adapter never moves them."""
    if device is None:
        return
    try:
        want = torch.device(device)
    except (TypeError, RuntimeError) as err:
        raise EnvError(f"device {device!r} is not a torch device: {err}") from err
    have = wrapper_device(backend)
    if want.type != have.type or (want.index is not None and want.index != have.index):
        raise EnvError(f"device {str(want)!r} was asked for, but the {backend or 'default'} "
                       f"backend keeps its envs on {str(have)!r}. Leave device out, or choose "
                       "the backend that runs there ('numpy' for the CPU, 'numba' or "
                       "'pycuda' for a GPU).")


def reseed(wrapper: EnvWrapper, seed: int) -> None:
    """Make every environment's start state again from `seed`, and the random actions'
    generator too. The current states are left as they are: the next reset starts the new
    ones."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise EnvError(f"seed must be a whole number >= 0, got {seed!r}.")
    state = wrapper.env.full_state(wrapper.num_envs, int(seed))
    for name in wrapper.store.reset_names:
        if name in state:
            pristine = wrapper.store.pristine(name)
            pristine.copy_(torch.from_numpy(state[name].data).reshape(pristine.shape))
    wrapper.generator.manual_seed(int(seed))
