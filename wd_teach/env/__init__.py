"""Env: what an environment is to wd_teach, and the folder each one lives in.

An environment is one folder of small files with the same names (envs/cartpole/ is the
shortest; copy a folder to start a new one):

    env.py         a class: the config (constants, with defaults and checks), one agent's
                   observation and action spaces, and the initial state as arrays for the
                   data store
    step.cu        the step as CUDA C kernels, for PyCUDA
    step_numba.py  the same kernels in Numba, line for line
    reference.py   the same step in NumPy, vectorised over all environments at once: the
                   CPU baseline, and the truth the kernels are checked against
    config.yaml    the default training config (wd_teach/train/config.py), with a `cpu:` block

The three steps take the store's arrays and constants by name and change them in place, so
the wrapper binds all three the same way. Besides its own state, every env has:

    actions   per agent  int32 [envs, agents] (one discrete head), [.., heads] (several),
                         or float32 [envs, agents, size] (continuous)  written by the caller
    obs       per agent  float32 [envs, agents, obs_size]               written by the step
    rewards   per agent  float32 [envs, agents]                         written by the step
    done      per env    int32: 1 when this step ended the episode      written by the step
    timestep  per env    int32: steps taken in the episode              the step adds 1

The env makes `obs` and its state in `initial_state()`; the base class makes the rest.
A folder can live anywhere: wd_teach/env/registry.py finds it by name or by path.

What an env folder takes from wd_teach, it takes from here, and `__all__` lists it all: the
one public API for env authors, kept stable (tests/test_env_api.py checks that envs/ and
the exercises' env folders import nothing else from wd_teach):

    Env, StateArray, EpisodeMetric, Tolerance, GymnasiumTwin   the contract (env.py)
    FastKernel, fast_floor                                     a step kernel's speed-only twin;
                                                               whether the fast door is open
    require, require_positive, EnvError                        config checks
    spaces                                                     gymnasium's spaces
    OBS, ACTIONS, REWARDS, DONE, TIMESTEP, STEP_FILES          the names every env shares
    env_folder                                                 where an env class's steps are
    cos32, sin32                                               float32 trigonometry (reference.py)
    agent_id, env_id, slot                                     where a Numba thread sits
                                                               (wd_teach.numba_index; step_numba.py)
    CUDA_INCLUDE_DIR                                           the folder of wd_teach.cuh (step.cu)
    MAX_THREADS_PER_BLOCK                                      the largest block a launch makes
    simulator_on                                               Numba kernels on the simulator?

The Numba names are handed out on first use: `import wd_teach.env` does not import Numba.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from wd_teach._simulator import simulator_on
from wd_teach.cuda_c import INCLUDE_DIR as CUDA_INCLUDE_DIR
from wd_teach.errors import EnvError
from wd_teach.floors import fast_floor
from wd_teach.launch import MAX_THREADS_PER_BLOCK

__all__ = [
    "ACTIONS",
    "CUDA_INCLUDE_DIR",
    "DONE",
    "MAX_THREADS_PER_BLOCK",
    "OBS",
    "REWARDS",
    "STEP_FILES",
    "TIMESTEP",
    "Env",
    "EnvError",
    "EpisodeMetric",
    "FastKernel",
    "GymnasiumTwin",
    "StateArray",
    "Tolerance",
    "agent_id",
    "cos32",
    "env_folder",
    "env_id",
    "fast_floor",
    "require",
    "require_positive",
    "simulator_on",
    "sin32",
    "slot",
    "spaces",
]
#: Numba device functions (wd_teach/numba_index.py), imported when first asked for.
NUMBA_NAMES = ("agent_id", "env_id", "slot")

OBS, ACTIONS, REWARDS, DONE, TIMESTEP = "obs", "actions", "rewards", "done", "timestep"
#: The steps of an env, one file per backend, in the folder of its class.
STEP_FILES = ("step.cu", "step_numba.py", "reference.py")


def require(ok: bool, message: str) -> None:
    """Raise EnvError(message) unless `ok`: how configs say what cannot work."""
    if not ok:
        raise EnvError(message)


def require_positive(config, *names: str) -> None:
    """Each of the config's fields `names` above zero, or an EnvError that names it."""
    for name in names:
        value = getattr(config, name)
        require(value > 0, f"{name} must be positive, got {value}.")


def action_counts(space: spaces.Space) -> list[int]:
    """The choices of each head of a categorical space: [n] for Discrete(n), the nvec of a
    MultiDiscrete."""
    return [int(space.n)] if isinstance(space, spaces.Discrete) else [int(n) for n in space.nvec]


@dataclass(frozen=True)
class StateArray:
    """One array of an env's initial state, and how the store keeps it. `allow_nonfinite`:
    the array means to hold NaN or infinity (DataStore.push refuses them otherwise)."""

    data: np.ndarray
    per: str = "agent"
    reset: bool = True
    allow_nonfinite: bool = False


@dataclass(frozen=True)
class EpisodeMetric:
    """A number an env reports per episode: `read(store)` gives, on the device, one value
    per environment from the store's arrays (Tag: runners tagged so far); at the step an
    episode ends its value is added up, and an iteration reports the mean per episode as
    `<name>_per_episode`. `label` names it on a plot's axis."""

    label: str
    read: Callable[[Any], Any]


@dataclass(frozen=True)
class Tolerance:
    """How far a backend's floats may be from the reference's: |got - want| <= atol +
    rtol * |want|. Integer arrays are always compared exactly. `why` says where the
    difference comes from, for the consistency report."""

    rtol: float = 0.0
    atol: float = 0.0
    why: str = ""

    def __str__(self) -> str:
        text = f"|got - want| <= {self.atol:g} + {self.rtol:g} * |want|"
        return f"{text} ({self.why})" if self.why else text


@dataclass(frozen=True)
class GymnasiumTwin:
    """An env that re-creates a gymnasium env says so here, and tests/test_classic_control.py
    steps the two side by side: from our start state, with our actions, the same
    observations, rewards, terminations and truncations.

    `env_id` is gymnasium's (e.g. "CartPole-v1"); `state` names our store arrays that make
    its `state`, in its order; `steps` how many steps to compare; `rtol`, `atol` how far our
    float32 may be from its float64, and `why`. `every_episode_terminates`: within `steps`
    every episode ends on its own (the pole falls), which the test then checks; otherwise
    the test cuts both at `steps` and checks that both call it a truncation."""

    env_id: str
    state: tuple[str, ...]
    steps: int
    rtol: float
    atol: float
    why: str
    every_episode_terminates: bool = False


@dataclass(frozen=True)
class FastKernel:
    """A twin of one of an env's step kernels, for speed alone: behind the fast door
    (wd_teach.floors), the wrapper launches it in the plain kernel's place, with `threads`
    threads a block (several blocks an env where that is fewer than its agents). It takes
    the plain kernel's arguments, must write what the plain kernel writes, bit for bit (a
    test holds the two equal on every backend), and says in its own source what it gained.

    `replaces` and `name` are the plain kernel's name and the twin's; `cuda` its CUDA C file
    (PyCUDA), `numba` the module beside env.py that holds its Numba twin. `threads` 0: the
    twin cannot run this game (its stage would not fit), and the plain kernel runs."""

    replaces: str
    name: str
    cuda: Path
    numba: str
    threads: int


class Env:
    """The base of every environment: a config, spaces, an initial state and three steps.

    A subclass sets `Config` (a dataclass with defaults and a `validate()` method) and
    `step_kernels` (the kernels one step launches, in order), and writes `num_agents`,
    `observation_space`, `action_space` and `initial_state()`. The steps are found in the
    folder of the class (or of its nearest parent that has them): step.cu, step_numba.py,
    reference.py.
    """

    Config: ClassVar[type]
    step_kernels: ClassVar[tuple[str, ...]]
    #: The consistency check's tolerance for this env's floats.
    tolerance: ClassVar[Tolerance] = Tolerance()
    #: CUDA C files loaded before the env's own step.cu (kernels that envs share).
    shared_cuda: ClassVar[tuple[Path, ...]] = ()
    #: The gymnasium env this one re-creates, if any, and how closely.
    gymnasium_twin: ClassVar[GymnasiumTwin | None] = None

    def __init__(self, config=None, **changes):
        base = config if config is not None else self.Config()
        if not isinstance(base, self.Config):
            raise EnvError(f"{type(self).__name__} takes a {self.Config.__name__}, got "
                           f"{type(base).__name__}.")
        known = {f.name for f in dataclasses.fields(self.Config)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise EnvError(f"{self.Config.__name__} has no field {', '.join(map(repr, unknown))}"
                           f". Its fields: {', '.join(sorted(known))}.")
        self.config = dataclasses.replace(base, **changes)
        self.config.validate()

    # -- what a subclass says ---------------------------------------------------------------

    @property
    def num_agents(self) -> int:
        raise NotImplementedError

    @property
    def episode_length(self) -> int:
        return self.config.episode_length

    @property
    def observation_space(self) -> spaces.Box:
        """What one agent sees each step."""
        raise NotImplementedError

    @property
    def action_space(self) -> spaces.Space:
        """What one agent chooses each step: Discrete, MultiDiscrete or a 1-D Box."""
        raise NotImplementedError

    def initial_state(self, num_envs: int, rng: np.random.Generator) -> dict[str, StateArray]:
        """The env's own arrays at the start of an episode, `obs` among them, for
        `num_envs` copies. Resets come back to exactly this."""
        raise NotImplementedError

    def constants(self) -> dict[str, int | float]:
        """Scalars the steps take by name (num_envs, num_agents, episode_length are given)."""
        return {}

    def gymnasium_action(self, action: np.ndarray):
        """One agent's action as the gymnasium twin takes it: an int for Discrete, a float64
        array for a Box. An env whose actions mean something else overrides this."""
        if isinstance(self.action_space, spaces.Discrete):
            return int(action)
        return np.asarray(action, np.float64)

    # -- the three steps, found in the env's folder ----------------------------------------
    # -- what is special about this env (nothing, unless a subclass says so) ----------------
    #
    # The trainer, the rollout, the metrics, the reports and the benchmarks name no env:
    # what they need to know of one, it says here.

    #: True when a step kernel holds an environment's agents together with a barrier
    #: (__syncthreads / cuda.syncthreads) or shares memory between them: a barrier waits
    #: only for the threads of one block, so such an env must run one block per
    #: environment, and a launch that would split it over several blocks is refused.
    #: Agents that only read each other's state in a later kernel launch need no barrier.
    one_block_per_env: ClassVar[bool] = False

    #: Threads a block for a step kernel that runs faster in blocks of fewer than one thread
    #: an agent: {kernel name: threads}. Such a kernel takes several blocks an environment
    #: and must work out its own agents from wd_agent_id() / agent_id() (the launcher's
    #: other kernels keep one thread an agent in as few blocks as fit). Speed only: the
    #: kernel writes the same whatever its blocks (Tag's grid search: envs/_tag/game.py).
    step_threads: ClassVar[dict[str, int]] = {}

    #: Store arrays that every step writes before any kernel reads them (Tag: `nearest`,
    #: which agent each slot shows). A checkpoint may lack them, one saved before the array
    #: existed: resuming keeps the store's own, which the next step overwrites.
    rewritten_each_step: ClassVar[tuple[str, ...]] = ()

    def agent_roles(self) -> dict[str, list[int]]:
        """Named groups of agents, for a policy's `agents` in a training config (Tag:
        'taggers' and 'runners'). Every env also knows 'all', 'first:stop' and lists."""
        return {}

    def role_observation_spaces(self) -> dict[str, spaces.Box]:
        """Each role's own observation space, where roles see different things (a speaker
        hears which landmark is the goal, a listener sees the map): {role: Box}, roles as
        agent_roles() names them. {}, the default: every agent sees observation_space.

        The store's `obs` stays one array, as wide as observation_space (the widest role's),
        which the kernels write with one stride; a role whose space is smaller writes its
        first columns (the rest stay 0), and a policy of that role reads only those: its
        network's input is its role's size, with no padding (obs_size_of)."""
        return {}

    def _role_of(self, agent: int, among) -> str | None:
        """The first role of agent_roles() that holds `agent` and is a key of `among` (a
        role_*_spaces() dict); None if none is."""
        return next((role for role, members in self.agent_roles().items()
                     if role in among and agent in members), None)

    def observation_space_of(self, agent: int) -> spaces.Box:
        """What agent `agent` sees: its role's space (role_observation_spaces), or the env's."""
        own = self.role_observation_spaces()
        role = self._role_of(agent, own)
        return self.observation_space if role is None else own[role]

    def obs_size_of(self, agents) -> int:
        """The observation size of a policy acting for `agents` (agent indices): their role's
        when all are of one role with its own space, the env's otherwise. Agents of roles
        that see different sizes cannot share one policy: refused with an EnvError."""
        own = self.role_observation_spaces()
        if not own:
            return self.obs_size
        sizes = {}
        for agent in agents:
            size = int(np.prod(self.observation_space_of(agent).shape))
            sizes.setdefault(size, self._role_of(agent, self.agent_roles()) or "no role")
        if len(sizes) > 1:
            shown = ", ".join(f"{role} {size}" for size, role in sizes.items())
            raise EnvError(f"these agents are of roles that see different observation sizes "
                           f"({shown}): give each role its own policy.")
        return next(iter(sizes))

    def role_action_spaces(self) -> dict[str, spaces.Space]:
        """Each role's own action space, where roles choose among different things (a
        speaker with three words, a listener with five moves): {role: space}, roles as
        agent_roles() names them. {}, the default: every agent chooses from action_space.

        Categorical only: a role's space is Discrete or MultiDiscrete, with as many heads as
        action_space and no head larger than its. The store's `actions` stays one array; a
        role's policy has its own number of choices (no padding in its network), and its
        probabilities reach the sampler with the choices it lacks at probability 0, which
        the sampler never draws."""
        return {}

    def action_space_of(self, agent: int) -> spaces.Space:
        """What agent `agent` chooses from: its role's space (role_action_spaces), checked
        to fit in action_space, or the env's."""
        own, roles = self.role_action_spaces(), self.agent_roles()
        unknown = sorted(set(own) - set(roles))
        if unknown:
            raise EnvError(f"{type(self).__name__}.role_action_spaces names roles that "
                           f"agent_roles() does not: {', '.join(map(repr, unknown))} (its roles: "
                           f"{', '.join(map(repr, roles)) or 'none'}).")
        role = self._role_of(agent, own)
        return self.action_space if role is None else self._checked_role_action_space(role,
                                                                                      own[role])

    def action_space_of_agents(self, agents) -> spaces.Space:
        """The action space of a policy acting for `agents`: their role's, or the env's.
        Agents of roles that choose from different spaces cannot share one policy: refused
        with an EnvError."""
        if not self.role_action_spaces():
            return self.action_space
        found: dict[str, spaces.Space] = {}  # role -> space, one role per distinct space
        for agent in agents:
            space = self.action_space_of(agent)
            if all(space != other for other in found.values()):
                found[self._role_of(agent, self.agent_roles()) or "no role"] = space
        if len(found) > 1:
            shown = ", ".join(f"{role} {space}" for role, space in found.items())
            raise EnvError(f"these agents are of roles that choose from different action "
                           f"spaces ({shown}): give each role its own policy.")
        return next(iter(found.values()))

    def _checked_role_action_space(self, role: str, space: spaces.Space) -> spaces.Space:
        env_space = self.action_space
        if not isinstance(env_space, (spaces.Discrete, spaces.MultiDiscrete)):
            raise EnvError(f"{type(self).__name__}.role_action_spaces: roles may have their own "
                           f"action spaces only where actions are categorical (Discrete or "
                           f"MultiDiscrete); this env's are {env_space}.")
        if (type(space) is not type(env_space)
                or len(action_counts(space)) != len(action_counts(env_space))
                or np.any(np.asarray(space.start) != 0)
                or any(mine > widest for mine, widest in zip(action_counts(space),
                                                             action_counts(env_space),
                                                             strict=True))):
            raise EnvError(f"{type(self).__name__}.role_action_spaces: role {role!r} has "
                           f"{space}, which does not fit in the env's action_space "
                           f"{env_space}: give it the same kind of space with as many heads, "
                           f"each starting at 0 and none with more choices (action_space is "
                           f"the widest role's).")
        return space

    def agents_in_game(self, store):
        """Which agents still play, [num_envs, num_agents] bool on the store's device, read
        from its arrays (Tag: a tagged runner has left its game); None, the default, when
        every agent plays until its episode ends. An adapter whose library lets an agent
        leave mid-episode (PettingZoo's `agents`) reads it after each step."""
        return None

    @property
    def global_state_size(self) -> int:
        """Numbers per env in `global_state(store)`: the whole game's state, which a
        centralized critic reads (trainer.critic: centralized). 0, the default: this env
        declares no global state, and its agents' critics read their own observations."""
        return 0

    def global_state(self, store):
        """The state of the whole game, [num_envs, global_state_size] float32 on the store's
        device, read from its arrays each step (Tag: every agent's place, speed, heading and
        whether it is still in the game). A critic that sees it during training (MAPPO's
        centralized critic) can tell apart what one agent's observation mixes up; the actors
        never read it, so playing needs only the observations. None, the default: no
        global state (then global_state_size is 0)."""
        return None

    def episode_metrics(self) -> dict[str, EpisodeMetric]:
        """Numbers this env reports per episode besides the return (Tag: runners tagged),
        each read from the store when an episode ends and averaged over the episodes."""
        return {}

    def frame_arrays(self) -> list[str]:
        """The store arrays an animation of this env draws a frame from (default: every
        array of its initial state but the observation)."""
        return [n for n in self.initial_state(1, np.random.default_rng(0)) if n != OBS]

    def draw_frame(self, ax, frames: dict[str, np.ndarray], k: int) -> None:
        """Draw step `k` of a recorded game on the matplotlib axes `ax` (clear it first).
        `frames` is what Trainer.evaluate(record=True) keeps: each of frame_arrays() for one
        env, one row per step, the start included. `wd-teach play` makes its video of these
        drawings. An env that draws nothing leaves this out: play says so and still reports
        its metrics (wd_teach.train.video.draws tells the two apart)."""
        raise EnvError(f"{type(self).__name__} does not draw its games: give its class a "
                       "draw_frame(ax, frames, k) method to watch them.")

    def params_for_agents(self, num_agents: int) -> dict:
        """Changes to this env's config that make a game of `num_agents` agents, for the
        benchmarks' sweeps over agents. The default: an env with a fixed number of agents."""
        if num_agents == self.num_agents:
            return {}
        raise EnvError(f"{type(self).__name__} has {self.num_agents} agent(s) per environment, "
                       f"not {num_agents}: it does not change its number of agents. Leave "
                       "the number of agents out, or choose an env that scales them.")

    # -- the three steps, found in the subclass's folder ------------------------------------

    @property
    def folder(self) -> Path:
        """The folder of step.cu, step_numba.py and reference.py (see env_folder)."""
        return env_folder(type(self))

    def cuda_sources(self) -> list[Path | str]:
        """What PyCUDA loads: shared kernels first, then step.cu."""
        return [*self.shared_cuda, self.folder / "step.cu"]

    def include_dirs(self) -> list[Path]:
        """Where nvcc finds the headers of cuda_sources(): the folder of each source given as
        a file (this env's, its shared kernels'); none for CUDA C given as text, as an env
        made in a notebook gives it (wd_teach's own headers are always found)."""
        files = [Path(s) for s in self.cuda_sources() if isinstance(s, Path)]
        return list(dict.fromkeys(f.parent for f in files))

    def fast_kernels(self) -> tuple[FastKernel, ...]:
        """Speed-only twins of step kernels, launched in their place behind the fast door
        (FastKernel says how). Most envs have none: the plain kernels are the lesson."""
        return ()

    def numba_twin(self, twin: FastKernel):
        """The module beside env.py that holds `twin`'s Numba kernel."""
        return self._sibling(twin.numba)

    def numba_kernels(self):
        """What the Numba backend loads: the module step_numba.py beside env.py."""
        return self._sibling("step_numba")

    def reference_step(self):
        """The NumPy step: `step()` in reference.py beside env.py."""
        return self._sibling("reference").step

    def _sibling(self, name: str):
        """The module `name` of the env's folder, imported as part of the same package as the
        class that lives there (so a subclass in a notebook gets its parent's steps)."""
        home = _home_class(type(self))
        package = home.__module__.rpartition(".")[0]
        if not package:
            raise EnvError(f"{home.__name__} comes from a module outside any package, so its "
                           f"{name}.py cannot be imported beside it. Load the env by its "
                           "folder instead: wd_teach.env.registry.find_env(FOLDER).env_class.")
        return importlib.import_module(f"{package}.{name}")

    # -- derived from the spaces ------------------------------------------------------------

    @property
    def obs_size(self) -> int:
        return int(np.prod(self.observation_space.shape))

    def action_shape(self, num_envs: int) -> tuple[int, ...]:
        """The shape of `actions` for `num_envs` environments."""
        space, lead = self.action_space, (num_envs, self.num_agents)
        if isinstance(space, spaces.Discrete):
            return lead
        if isinstance(space, spaces.MultiDiscrete):
            return (*lead, len(space.nvec))
        return (*lead, *space.shape)

    @property
    def action_dtype(self) -> np.dtype:
        return np.dtype(np.float32 if isinstance(self.action_space, spaces.Box) else np.int32)

    def full_state(self, num_envs: int, seed: int = 0) -> dict[str, StateArray]:
        """Every array of the store at the start: the env's own and the common ones."""
        require(isinstance(num_envs, (int, np.integer)) and not isinstance(num_envs, bool)
                and num_envs >= 1, f"num_envs must be a positive whole number, got {num_envs!r}.")
        state = dict(self.initial_state(int(num_envs), np.random.default_rng(seed)))
        if OBS not in state:
            raise EnvError(f"{type(self).__name__}.initial_state() must return the first "
                           f"observation as {OBS!r}.")
        common = {
            ACTIONS: StateArray(np.zeros(self.action_shape(num_envs), self.action_dtype),
                                reset=False),
            REWARDS: StateArray(np.zeros((num_envs, self.num_agents), np.float32), reset=False),
            DONE: StateArray(np.zeros(num_envs, np.int32), per="env", reset=False),
            TIMESTEP: StateArray(np.zeros(num_envs, np.int32), per="env", reset=True),
        }
        for name in common:
            require(name not in state, f"{name!r} is made by the Env base class; leave it "
                                       "out of initial_state().")
        return {**state, **common}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config})"


def env_folder(env_class: type) -> Path:
    """The folder that holds an env class's steps: the folder of the class itself, or of the
    nearest parent class whose file sits beside step.cu, step_numba.py and reference.py.

    Walking up the parents is what lets a learner subclass an env anywhere, a notebook
    included (whose classes have no file), and keep the parent's kernels."""
    return Path(inspect.getfile(_home_class(env_class))).parent


def _home_class(env_class: type) -> type:
    for cls in env_class.__mro__:
        if cls is Env:
            break
        file = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if file and all((Path(file).parent / name).is_file() for name in STEP_FILES):
            return cls
    raise EnvError(f"{env_class.__name__} has no folder with {', '.join(STEP_FILES)}: neither "
                   "it nor a parent class lives in env.py beside them. Put the class in env.py "
                   "of an env folder (copy envs/cartpole to start one), subclass an env that "
                   "has one, or override cuda_sources(), numba_kernels() and reference_step().")


def cos32(x: np.ndarray) -> np.ndarray:
    """cos of float32 values, worked out in double precision and rounded to float32.

    That is the correctly rounded answer: what the CUDA simulator gives (Python's math.cos
    works in double), and what a GPU's cosf is within 2 units in the last place of. numpy's
    own float32 cos may differ from it in the last bit."""
    return np.cos(np.asarray(x, np.float64)).astype(np.float32)


def sin32(x: np.ndarray) -> np.ndarray:
    """sin of float32 values, correctly rounded to float32 (see cos32)."""
    return np.sin(np.asarray(x, np.float64)).astype(np.float32)


def __getattr__(name: str):
    """`from wd_teach.env import agent_id` imports Numba then, not on `import wd_teach.env`:
    a run on the NumPy reference needs no Numba."""
    if name in NUMBA_NAMES:
        from wd_teach import numba_index

        return getattr(numba_index, name)
    raise AttributeError(f"module 'wd_teach.env' has no attribute {name!r}")
