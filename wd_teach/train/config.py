"""Training configs: YAML defaults per environment, overridden from Python or the command line.

Every environment's folder holds a complete config, config.yaml, with four sections (env,
policies, algorithm, trainer) and a `cpu` block of changes that make it a toy run where
there is no GPU. A run starts from those defaults and lays changes on top, in this order: a
YAML file of the user's, a Python dict, `--set key=value` strings:

    load_config("cartpole")                                   # the defaults
    load_config("path/to/my_env")                             # any env folder's defaults
    load_config(CartPole(episode_length=200))                 # an env object's
    load_config("cartpole", overrides={"trainer": {"lr": 1e-3}})
    load_config("my_run.yaml", sets=["trainer.lr=1e-3", "policies.taggers.hidden=[64, 64]"])

An env is named by a shipped name or a folder path (wd_teach/env/registry.py finds it); a
folder outside the package is named by its absolute path, so that a checkpoint finds it
from anywhere.

Everything is checked before anything is built: unknown keys (with the nearest known one),
values of the wrong type, an algorithm that does not exist. A policy is removed by setting
it to null. Changing `algorithm.name` drops the defaults that only the old algorithm knew.

Why by hand, not OmegaConf's structured configs: OmegaConf reads `1:10` as the number 70
(YAML 1.1), so this YAML loader would stay; it quietly takes 1 or 'yes' for true and 1 for
the string '1', which this module refuses; and its messages ("Value 'many' of type 'str'
could not be converted to Integer") would each need translating back into the ones below,
which name the key, the kind of value wanted and what was given. Little code would go.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wd_teach.backends import ALL as ENV_BACKENDS
from wd_teach.env import Env, registry
from wd_teach.errors import ConfigError, EnvError
from wd_teach.floors import COMPILED_LOSSES
from wd_teach.ranges import SEED_LIMIT, require_number, require_whole
from wd_teach.train.logger import LOGGERS
from wd_teach.train.policy import ACTIVATIONS
from wd_teach.train.selfplay import check_selfplay
from wd_teach.train.speed import PRECISIONS

SECTIONS = ("env", "policies", "algorithm", "trainer")
#: What a critic reads (trainer.critic): its agent's observation, or the env's global
#: state beside it (wd_teach/train/policy.py, ActorCritic).
CRITICS = ("independent", "centralized")
#: Counts that kernels and the store hold as int32 stay below this.
INT32_LIMIT = 2**31


class ConfigLoader(yaml.SafeLoader):
    """YAML as a config means it: `0:10` is a range of agents, not the base-60 number 10
    that YAML 1.1 reads, and `1e-3` is a number, not a string."""


ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:int"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
ConfigLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9][0-9_]*$"),
                                   list("-+0123456789"))
ConfigLoader.add_implicit_resolver("tag:yaml.org,2002:float",
                                   re.compile(r"^[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+$"),
                                   list("-+0123456789"))


def yaml_load(text: str):
    return yaml.load(text, Loader=ConfigLoader)  # a SafeLoader: no Python objects


@dataclass(frozen=True)
class EnvSection:
    name: str
    backend: str | None = None  # pycuda, numba or numpy; None: the best this machine runs
    num_envs: int = 64  # copies of the environment, stepped together
    params: dict = field(default_factory=dict)  # the environment's own Config fields


@dataclass(frozen=True)
class PolicySection:
    agents: str | list[int] = "all"  # all, a role the env names, 'first:stop', or a list
    hidden: tuple[int, ...] = (64, 64)  # the widths of the hidden layers
    lr: float | None = None  # None: trainer.lr
    shared: bool = False  # one body of hidden layers for actor and critic, two output layers
    activation: str | None = None  # tanh or relu; None: tanh (A2C, PPO), relu (DDPG)
    # This group's own algorithm, {name: ppo, clip_coef: 0.1, ...}: the hyperparameters both
    # know come from the run's `algorithm` section unless given here. None: the run's.
    algorithm: dict | None = None
    # Who the group plays as (wd_teach/train/selfplay.py):
    frozen: bool = False  # never updated: the other groups learn against it
    load: str | None = None  # start from this checkpoint's policy of the same name
    pool: int = 0  # self-play: keep this many snapshots of the group's earlier weights
    pool_every: int = 10  # iterations between two snapshots
    pool_play: float = 0.5  # the share of rollouts the group plays as a drawn snapshot


@dataclass(frozen=True)
class TrainerSection:
    iterations: int = 100  # rollouts, each followed by an update
    steps: int = 32  # steps of every env per rollout
    seed: int = 0  # weights, initial states, actions: the whole run
    lr: float = 3e-4  # the optimisers' learning rate
    checkpoint_every: int = 0  # iterations between checkpoints; 0: only at the end
    cuda_graphs: bool = True  # on a GPU, replay each rollout (and A2C's update) as a graph
    precision: str = "fp32"  # the policy's matmuls: fp32, tf32 or bf16 (GPU only)
    chunk_samples: int = 1_048_576  # the update's forward/backward in parts of this size
    compile: bool = False  # on a GPU, fast floor only (else nothing): the loss compiled
    logger: str = "csv"  # csv: files at the end; tensorboard: event files as it trains too
    critic: str = "independent"  # independent: each critic reads its agent's observation;
    # centralized: the env's global state too (MAPPO), for envs that declare one


@dataclass(frozen=True)
class TrainConfig:
    env: EnvSection
    policies: dict[str, PolicySection]
    algorithm_name: str
    algorithm: Any  # the algorithm's own Config dataclass
    trainer: TrainerSection

    def to_dict(self) -> dict:
        """The plain nested dict of this config: what YAML and checkpoints hold."""
        algorithm = {"name": self.algorithm_name, **dataclasses.asdict(self.algorithm)}
        policies = {name: _plain(dataclasses.asdict(p)) for name, p in self.policies.items()}
        return {"env": _plain(dataclasses.asdict(self.env)), "policies": policies,
                "algorithm": _plain(algorithm), "trainer": dataclasses.asdict(self.trainer)}

    def algorithm_of(self, policy: str) -> tuple[str, Any]:
        """(name, Config) of the algorithm policy `policy` learns with: its own
        (policies.NAME.algorithm) or the run's (the `algorithm` section)."""
        own = self.policies[policy].algorithm
        if own is None:
            return self.algorithm_name, self.algorithm
        return group_algorithm(self.algorithm_name, self.algorithm, own,
                               f"policies.{policy}.algorithm")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


def available_envs() -> list[str]:
    """The env names that need no path (any env folder's path works too)."""
    return registry.known_envs()


def find_env(name) -> registry.FoundEnv:
    """The env a config names, or a ConfigError that says what is wrong with the name."""
    try:
        return registry.find_env(name)
    except EnvError as err:
        raise ConfigError(f"env.name: {err}") from err


def default_config(env: str, gpu: bool | None = None) -> dict:
    """The raw defaults for `env` (a name or a folder): its folder's config.yaml, with the
    `cpu` block applied where there is no GPU."""
    raw = read_yaml(find_env(env).config_path)
    cpu = raw.pop("cpu", {}) or {}
    if gpu is None:
        from wd_teach.device import gpu_available

        gpu = gpu_available()
    return raw if gpu else merge(raw, cpu)


def load_config(source=None, *, env: str | None = None, overrides: dict | None = None,
                sets=(), gpu: bool | None = None) -> TrainConfig:
    """A checked TrainConfig. `source`: an env name, a YAML path, a dict, or a TrainConfig;
    an env folder's path, or an env object or class (its config's fields become
    env.params); `env` names the environment when `source` does not; then `overrides` (a
    nested dict) and `sets` ('key.sub=value' strings) on top. `gpu` picks the defaults' size
    (None: whether this machine has one)."""
    if isinstance(source, TrainConfig):
        source = source.to_dict()
    layers = []
    if isinstance(source, Env) or isinstance(source, type) and issubclass(source, Env):
        layers.append({"env": env_layer(source)})
    elif source is None or registry.is_env(source):
        env = env or source
    elif isinstance(source, (str, Path)):
        layers.append(read_yaml(Path(source)))
    elif isinstance(source, dict):
        layers.append(copy.deepcopy(source))
    else:
        raise ConfigError(f"a config is an env name, a YAML path, a dict or a TrainConfig; "
                          f"got {type(source).__name__}.")
    if overrides:
        layers.append(_check_mapping(overrides, "overrides"))
    layers.extend(parse_set(s) for s in sets)

    named = [layer.get("env", {}).get("name") for layer in layers
             if isinstance(layer.get("env"), dict)]
    names = {find_env(n).name for n in [env, *named] if n is not None}
    if len(names) > 1:
        raise ConfigError(f"the config names more than one environment ({', '.join(sorted(names))})"
                          ": a run trains on one.")
    if not names:
        raise ConfigError(f"which environment? Name one: {', '.join(available_envs())} "
                          "(env.name in a YAML file, or the ENV argument).")
    name = names.pop()
    base = default_config(name, gpu)
    changes: dict = {}
    for layer in layers:
        changes = merge(changes, layer)
    changes = merge(changes, {"env": {"name": name}})  # as found, whatever the folder's says
    new_algorithm = (changes.get("algorithm") or {}).get("name")
    if new_algorithm and new_algorithm != base["algorithm"].get("name"):
        module = _algorithm_module(new_algorithm)
        known = {f.name for f in dataclasses.fields(module.Config)}
        base["algorithm"] = {k: v for k, v in base["algorithm"].items() if k in known}
    return build(merge(base, changes))


def saved_run(config: dict) -> dict:
    """A saved run's config (a checkpoint's) with each policy and trainer setting it lacks
    written in at that setting's default. A setting the run lacks is newer than the run, and
    a new setting's default keeps what the code did before it; the env's config.yaml may
    choose otherwise today (Tag's `shared: true`), which would make the run's policies a
    shape they never had."""
    config = copy.deepcopy(config)
    sections = [(config.get("trainer"), TrainerSection)]
    policies = config.get("policies")
    if isinstance(policies, dict):
        sections += [(policy, PolicySection) for policy in policies.values()]
    for section, kind in sections:
        if isinstance(section, dict):
            for f in dataclasses.fields(kind):
                if f.name not in section and f.default is not dataclasses.MISSING:
                    section[f.name] = f.default
    return config


def build(raw: dict) -> TrainConfig:
    """Check a complete raw config and make the TrainConfig."""
    raw = _check_mapping(raw, "config")
    _unknown(raw, SECTIONS, "")
    for section in SECTIONS:
        if section not in raw:
            raise ConfigError(f"the config has no {section!r} section.")
    env = _section(EnvSection, raw["env"], "env")
    find_env(env.name)
    if env.backend is not None and env.backend not in ENV_BACKENDS:
        raise ConfigError(f"env.backend={env.backend!r}: choose one of "
                          f"{', '.join(ENV_BACKENDS)}, or leave it out (null) for the best "
                          "this machine runs.")
    if env.backend is not None:  # a Backend (a str subclass) as the plain name YAML writes
        env = dataclasses.replace(env, backend=str(env.backend))
    policies_raw = _check_mapping(raw["policies"], "policies")
    policies = {str(name): _section(PolicySection, spec or {}, f"policies.{name}")
                for name, spec in policies_raw.items() if spec is not None}
    if not policies:
        raise ConfigError("policies: the config needs at least one policy.")
    algorithm_raw = dict(_check_mapping(raw["algorithm"], "algorithm"))
    algorithm_name = algorithm_raw.pop("name", None)
    module = _algorithm_module(algorithm_name)
    algorithm = _section(module.Config, algorithm_raw, "algorithm")
    trainer = _section(TrainerSection, raw["trainer"], "trainer")
    check_trainer(trainer)
    require_whole("env.num_envs", env.num_envs, low=1, high=INT32_LIMIT)
    if trainer.precision not in PRECISIONS:
        raise ConfigError(f"trainer.precision must be one of {', '.join(PRECISIONS)}, got "
                          f"{trainer.precision!r}.")
    if trainer.logger not in LOGGERS:
        raise ConfigError(f"trainer.logger must be one of {', '.join(LOGGERS)}, got "
                          f"{trainer.logger!r}.")
    for name, policy in policies.items():
        if not policy.hidden or min(policy.hidden) < 1:
            raise ConfigError(f"policies.{name}.hidden must list at least one positive "
                              f"width, got {list(policy.hidden)}.")
        if policy.lr is not None:
            require_number(f"policies.{name}.lr", policy.lr, low=0, low_open=True)
        if not isinstance(policy.shared, bool):
            raise ConfigError(f"policies.{name}.shared must be true or false, got "
                              f"{policy.shared!r}.")
        if policy.activation not in (None, *ACTIVATIONS):
            raise ConfigError(f"policies.{name}.activation must be one of "
                              f"{', '.join(ACTIVATIONS)}, got {policy.activation!r}.")
        check_selfplay(name, policy)
    check_critic(trainer.critic, policies, module.CAPABILITIES)
    check_group_algorithms(algorithm_name, algorithm, policies)
    if trainer.compile and algorithm_name not in COMPILED_LOSSES:  # a fast floor's option
        raise ConfigError(f"trainer.compile: algorithm {algorithm_name!r} has no loss to "
                          f"compile ({' and '.join(n.upper() for n in COMPILED_LOSSES)} "
                          "have). Set trainer.compile=false.")
    module.check_ranges(algorithm)
    return TrainConfig(env, policies, algorithm_name, algorithm, trainer)


def group_algorithm(run_name: str, run_config, own: dict, where: str) -> tuple[str, Any]:
    """A group's own algorithm: `own`'s name (the run's if it names none), with the run's
    values of the hyperparameters both algorithms have, and then `own`'s; checked."""
    own = dict(_check_mapping(own, where))
    name = own.pop("name", run_name)
    from wd_teach.train.algorithms import ALGORITHMS

    if name not in ALGORITHMS:
        raise ConfigError(f"{where}.name={name!r}: choose one of {', '.join(ALGORITHMS)}.")
    module = ALGORITHMS[name]
    fields = {f.name for f in dataclasses.fields(module.Config)}
    inherited = {k: v for k, v in dataclasses.asdict(run_config).items() if k in fields}
    config = _section(module.Config, {**inherited, **own}, where)
    module.check_ranges(config)
    return name, config


def check_group_algorithms(algorithm_name: str, algorithm, policies) -> None:
    """Every policy's own algorithm checked, and all of one kind of policy with the run's
    (the groups act together in one rollout: all stochastic, or all deterministic)."""
    from wd_teach.train.algorithms import ALGORITHMS

    kind = ALGORITHMS[algorithm_name].CAPABILITIES.policy
    for name, policy in policies.items():
        if policy.algorithm is None:
            continue
        where = f"policies.{name}.algorithm"
        own, _ = group_algorithm(algorithm_name, algorithm, policy.algorithm, where)
        if ALGORITHMS[own].CAPABILITIES.policy != kind:
            raise ConfigError(f"{where}.name={own!r} trains a {ALGORITHMS[own].CAPABILITIES.policy}"
                              f" policy, the run's {algorithm_name} a {kind} one: the groups "
                              "act in one rollout, so their algorithms must be of one kind "
                              "(a2c and ppo together; ddpg with ddpg).")


def check_critic(critic, policies: dict[str, PolicySection], can) -> None:
    """trainer.critic: one of CRITICS; a centralized critic is a network of its own beside
    a stochastic actor (A2C, PPO), so no policy may share one body between the two.
    Whether the env has a global state is checked when the env is made (Trainer)."""
    if critic not in CRITICS:
        raise ConfigError(f"trainer.critic must be one of {', '.join(CRITICS)}, got "
                          f"{critic!r}.")
    if critic == "independent":
        return
    if can.policy != "stochastic":
        raise ConfigError("trainer.critic=centralized is for A2C and PPO, whose critic is "
                          "a state value; DDPG's critic reads the action too. Use "
                          "algorithm.name: a2c or ppo, or trainer.critic: independent.")
    shared = [name for name, p in policies.items() if p.shared]
    if shared:
        raise ConfigError(f"trainer.critic=centralized: policies {', '.join(shared)} set "
                          "shared: true, one body for actor and critic, but a centralized "
                          "critic reads the global state the actor never sees. Set "
                          "policies.NAME.shared: false, or trainer.critic: independent.")


def check_trainer(trainer: TrainerSection) -> None:
    """Every trainer value in its range, NaN and infinity refused: a bad one would otherwise
    fail deep inside torch or numpy, or train quietly to NaN."""
    for key in ("iterations", "steps", "chunk_samples"):
        require_whole(f"trainer.{key}", getattr(trainer, key), low=1, high=INT32_LIMIT)
    require_whole("trainer.checkpoint_every", trainer.checkpoint_every, low=0)
    require_whole("trainer.seed", trainer.seed, low=0, high=SEED_LIMIT)
    require_number("trainer.lr", trainer.lr, low=0, low_open=True)


# -- the environment and its agents -----------------------------------------------------------


def env_layer(env) -> dict:
    """The env section that names an env object or class: its name, and for an object every
    field of its config, so that the config describes the very env given."""
    found = registry.find_env_of_class(env if isinstance(env, type) else type(env))
    if isinstance(env, type):
        return {"name": found.name}
    params = {f.name: _plain(getattr(env.config, f.name))
              for f in dataclasses.fields(env.config)}
    return {"name": found.name, "params": params}


def make_env(section: EnvSection):
    """The environment object of `section` (host only: nothing is on the device yet)."""
    env_class = find_env(section.name).env_class
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in section.params.items()}
    try:
        return env_class(**params)
    except EnvError as err:
        raise ConfigError(f"env.params: {err}") from err


def resolve_agents(spec, env, policy: str) -> list[int]:
    """The agent indices of a policy's `agents`: 'all', a role the env names
    (Env.agent_roles: Tag's 'taggers' and 'runners'), 'first:stop', or a list of indices."""
    where = f"policies.{policy}.agents"
    roles = env.agent_roles()
    if isinstance(spec, list):
        return [int(a) for a in spec]
    if spec == "all":
        return list(range(env.num_agents))
    if spec in roles:
        return list(roles[spec])
    if ":" in spec:
        try:
            first, stop = (int(part) for part in spec.split(":"))
        except ValueError:
            first = stop = None
        if first is not None:
            return list(range(first, stop))
    named = "".join(f"'{role}', " for role in roles)
    has = (f"{type(env).__name__}'s roles are {', '.join(roles)}" if roles
           else f"{type(env).__name__} names no roles")
    raise ConfigError(f"{where}={spec!r}: use 'all', {named}'first:stop' (e.g. '0:10') or a "
                      f"list of agent indices ({has}).")


# -- reading, merging, parsing ----------------------------------------------------------------


def read_yaml(path: Path) -> dict:
    if not path.is_file():
        raise ConfigError(f"no config file at {path}. To start from an env's defaults, give "
                          f"its name ({', '.join(available_envs())}) or its folder's path.")
    try:
        raw = yaml_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {err}") from err
    return _check_mapping(raw, str(path))


def merge(base: dict, changes: dict) -> dict:
    """`changes` laid over `base`, dict by dict (a copy; neither is changed)."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_set(text: str) -> dict:
    """'trainer.lr=1e-3' -> {'trainer': {'lr': 0.001}}; the value is read as YAML."""
    if not isinstance(text, str) or "=" not in text:
        raise ConfigError(f"--set takes key=value, e.g. trainer.lr=1e-3; got {text!r}.")
    key, _, value = text.partition("=")
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"--set {text!r}: the key {key!r} has an empty part.")
    try:
        parsed = yaml_load(value) if value.strip() else None
    except yaml.YAMLError as err:
        raise ConfigError(f"--set {text!r}: the value is not valid YAML ({err}).") from err
    nested: Any = parsed
    for part in reversed(parts):
        nested = {part: nested}
    return nested


def _algorithm_module(name):
    from wd_teach.train.algorithms import ALGORITHMS

    if name not in ALGORITHMS:
        raise ConfigError(f"algorithm.name={name!r}: choose one of {', '.join(ALGORITHMS)}.")
    return ALGORITHMS[name]


def _check_mapping(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a mapping of keys to values, got "
                          f"{type(value).__name__} ({value!r}).")
    return value


def _unknown(raw: dict, known, prefix: str) -> None:
    for key in raw:
        if key not in known:
            near = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f" Did you mean '{prefix}{near[0]}'?" if near else ""
            raise ConfigError(f"unknown key '{prefix}{key}' in the config.{hint} "
                              f"Known here: {', '.join(known)}.")


def _section(cls, raw, where: str):
    raw = _check_mapping(raw, where)
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    _unknown(raw, fields, f"{where}.")
    values = {key: _coerce(value, hints[key], f"{where}.{key}") for key, value in raw.items()}
    try:
        return cls(**values)
    except TypeError as err:  # a field without a default left out
        raise ConfigError(f"{where}: {err}") from err


def _coerce(value, hint, key: str):
    """`value` as the type `hint` says, or a ConfigError that names `key`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, arg, key)
            except ConfigError as err:
                errors.append(err)
        raise errors[0]
    if hint is dict or origin is dict:
        return dict(_check_mapping(value if value is not None else {}, key))
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key} must be a list, e.g. [64, 64]; got {value!r}.")
        items = [_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key} must be true or false, got {value!r}.")
    if hint is int:
        if isinstance(value, str):
            value = _number(value, key, "a whole number")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key} must be a whole number, got {value!r}.")
        return value
    if hint is float:
        if isinstance(value, str):
            value = _number(value, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key} must be a number, got {value!r}.")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {value!r}.")
        return value
    return value


def _number(text: str, key: str, kind: str = "a number") -> float:
    """YAML reads 1e-3 as a string (it wants 1.0e-3); take it as the number it means."""
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{key} must be {kind}, got {text!r}.") from None


def _plain(value):
    """Tuples as lists and NumPy numbers as Python ones, for YAML."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if hasattr(value, "item") else value
