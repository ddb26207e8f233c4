"""Checkpoint files: every tensor in safetensors, everything else as JSON beside them.

A training state (Trainer.state_dict) is a nested tree: dicts and lists of numbers,
strings and tensors (weights, optimiser moments, the env's arrays, RNG states). A pickle
(torch.save) would store it in one line, but reading a pickle runs whatever code the file
asks for: a checkpoint from a stranger could do anything. safetensors stores only tensors
(a JSON header and raw bytes), and any tool of the ecosystem reads it without running code.

So a checkpoint is one .safetensors file:

* its tensors are the tree's tensors, each under its dotted place in the tree
  (`learners.cart.policy.body.0.weight`);
* its metadata (a str -> str dict in the header) holds the rest of the tree as JSON, with
  each tensor replaced by a reference `{"$tensor": "learners.cart.policy.body.0.weight"}`.

JSON knows only str-keyed dicts, lists, numbers, strings, booleans and null, so the two
other things a state holds are marked too: a tuple `{"$tuple": [...]}`, a dict with integer
keys (an optimiser's state per parameter) `{"$int_keys": {"0": ...}}`.

The file is written whole or not at all (wd_teach.files.atomic_write), and reading it
checks everything it can: a file that is missing, cut short, random bytes, a pickle, or a
safetensors file from elsewhere is refused with a TrainError that says which.

A file that reads well may still not fit the trainer it is loaded into (another env, other
policies, other sizes): `check_compatible` compares the two, part by part, before the
trainer changes at all, and says which part differs and the usual reason why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from wd_teach.errors import TrainError
from wd_teach.files import atomic_write

if TYPE_CHECKING:
    from wd_teach.train.trainer import Trainer

#: What the metadata says about a wd-teach checkpoint, so a foreign file is told apart.
FORMAT_NAME = "wd-teach training checkpoint"
FORMAT_VERSION = 2  # 1 was a pickle (checkpoint.pt), no longer read
SUFFIX = ".safetensors"
TENSOR, TUPLE, INT_KEYS = "$tensor", "$tuple", "$int_keys"
#: The first bytes of what torch.save writes: a zip archive, or a bare pickle.
PICKLE_STARTS = (b"PK\x03\x04", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
#: The parts of a state dict (Trainer.state_dict) a checkpoint must hold.
STATE_PARTS = ("format", "env", "config", "groups", "iteration", "env_steps", "history",
               "learners", "acting", "store", "stats", "generator", "torch_rng")


def write_checkpoint(state: dict, path: str | Path) -> Path:
    """Write a state tree to `path` as safetensors + JSON metadata, atomically."""
    path = Path(path)
    tensors: dict[str, torch.Tensor] = {}
    tree = to_json_tree(state, "", tensors)
    metadata = {"format": FORMAT_NAME, "version": str(FORMAT_VERSION),
                "iteration": str(state.get("iteration", "")), "state": json.dumps(tree)}
    with atomic_write(path) as temporary:
        save_file(tensors, temporary, metadata=metadata)
    return path


def read_checkpoint(path: str | Path) -> dict:
    """The state tree a checkpoint holds, tensors on the CPU. Raises TrainError, naming the
    file, for anything that is not a whole wd-teach checkpoint."""
    path = Path(path)
    if not path.is_file():
        raise TrainError(f"no checkpoint at {path}: no such file. Checkpoints are the "
                         f"checkpoint*{SUFFIX} files in a run's --out folder.")
    metadata, tensors = _read_safetensors(path)
    if metadata.get("format") != FORMAT_NAME:
        raise TrainError(f"{path} is a safetensors file, but not a wd-teach training "
                         f"checkpoint (its metadata has no format {FORMAT_NAME!r}). Make one "
                         "with Trainer.save() or `wd-teach train`.")
    if metadata.get("version") != str(FORMAT_VERSION):
        raise TrainError(f"{path} is a wd-teach checkpoint of format version "
                         f"{metadata.get('version')}; this wd-teach reads version "
                         f"{FORMAT_VERSION}. Train again with this version.")
    try:
        tree = json.loads(metadata["state"])
    except (KeyError, json.JSONDecodeError) as err:
        raise TrainError(f"{path} is damaged: the JSON part of the checkpoint (its 'state' "
                         f"metadata) cannot be read ({err}).") from None
    used: set[str] = set()
    state = from_json_tree(tree, tensors, used, path)
    unused = sorted(set(tensors) - used)
    if unused:
        raise TrainError(f"{path} is damaged: it holds tensors its JSON part never names: "
                         f"{', '.join(unused[:5])}.")
    if not isinstance(state, dict):
        raise TrainError(f"{path} is damaged: its state is not a dict.")
    return state


def to_json_tree(value, key: str, tensors: dict[str, torch.Tensor]):
    """`value` with every tensor moved into `tensors` (under its dotted `key`) and replaced
    by a reference; tuples and integer-keyed dicts marked, the rest as JSON has it."""
    if isinstance(value, torch.Tensor):
        if key in tensors:
            raise TrainError(f"two tensors of the state share the name {key!r}; rename one.")
        # A copy of its own on the CPU: safetensors refuses tensors that share memory.
        tensors[key] = value.detach().to("cpu", copy=True).contiguous()
        return {TENSOR: key}
    if isinstance(value, dict):
        if all(isinstance(k, int) and not isinstance(k, bool) for k in value) and value:
            return {INT_KEYS: {str(k): to_json_tree(v, _join(key, k), tensors)
                               for k, v in value.items()}}
        for k in value:
            if not isinstance(k, str) or k.startswith("$"):
                raise TrainError(f"cannot store the key {k!r} at {key or 'the top'} of the "
                                 "state: keys are strings not starting with '$'.")
        return {k: to_json_tree(v, _join(key, k), tensors) for k, v in value.items()}
    if isinstance(value, tuple):
        return {TUPLE: [to_json_tree(v, _join(key, i), tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [to_json_tree(v, _join(key, i), tensors) for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TrainError(f"cannot store {key} in a checkpoint: a {type(value).__name__}. A state "
                     "holds tensors, dicts, lists, tuples, numbers, strings and None.")


def from_json_tree(tree, tensors: dict[str, torch.Tensor], used: set[str], path):
    """The inverse of `to_json_tree`: references replaced by the tensors they name."""
    if isinstance(tree, list):
        return [from_json_tree(v, tensors, used, path) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if TENSOR in tree:
        name = tree[TENSOR]
        if name not in tensors:
            raise TrainError(f"{path} is damaged: its JSON part names the tensor {name!r}, "
                             "which the file does not hold.")
        used.add(name)
        return tensors[name]
    if TUPLE in tree:
        return tuple(from_json_tree(v, tensors, used, path) for v in tree[TUPLE])
    if INT_KEYS in tree:
        return {int(k): from_json_tree(v, tensors, used, path)
                for k, v in tree[INT_KEYS].items()}
    return {k: from_json_tree(v, tensors, used, path) for k, v in tree.items()}


def checkpoint_iteration(path: str | Path) -> int | None:
    """The iteration a checkpoint was saved at, read from its header alone (no tensors);
    None for a file that is not a readable wd-teach checkpoint."""
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
        return int(metadata["iteration"]) if metadata.get("format") == FORMAT_NAME else None
    except (SafetensorError, OSError, KeyError, ValueError):
        return None


def latest_checkpoint(folder: str | Path) -> Path:
    """The checkpoint of the highest iteration in a run's folder (the final
    checkpoint.safetensors, or the last checkpoint_NNNNN.safetensors of a run that was
    stopped). Temporary files of an interrupted write (.*.tmp) are never taken."""
    folder = Path(folder)
    found = [(it, p.name == f"checkpoint{SUFFIX}", p) for p in folder.glob(f"checkpoint*{SUFFIX}")
             if (it := checkpoint_iteration(p)) is not None]
    if not found:
        raise TrainError(f"{folder} holds no readable checkpoint (checkpoint*{SUFFIX}).")
    return max(found)[2]


# -- does a checkpoint fit a trainer? ---------------------------------------------------------


def check_compatible(trainer: Trainer, state: dict, path) -> None:
    """Refuse a state that does not fit `trainer`, before anything is changed: its
    parts, env, policies, algorithm, store arrays, and the layout (names, shapes,
    dtypes) of every learner's, the acting's, the statistics' and the RNGs' tensors."""
    missing = [part for part in STATE_PARTS if part not in state]
    if missing:
        raise TrainError(f"{path} lacks {', '.join(missing)}: it is not a whole wd-teach "
                         "training checkpoint.")
    mine, theirs = trainer.config.env.name, state["env"]
    if theirs != mine:
        raise TrainError(f"{path} is a checkpoint of {theirs!r}, but this trainer runs "
                         f"{mine!r}. Load it into a trainer of {theirs!r} "
                         "(Trainer.from_checkpoint builds one from the checkpoint).")
    groups = {g.name: list(g.agents) for g in trainer.groups}
    if state["groups"] != groups:
        raise TrainError(f"{path} holds policies {_describe(state['groups'])}, this trainer "
                         f"has {_describe(groups)}: the same policies over the same "
                         "agents are needed to go on.")
    algorithm = state["config"]["algorithm"]["name"]
    if algorithm != trainer.config.algorithm_name:
        raise TrainError(f"{path} was trained with {algorithm}, this trainer runs "
                         f"{trainer.config.algorithm_name}.")
    check_store(trainer.wrapper.store, state["store"], path,
                optional=trainer.wrapper.env.rewritten_each_step)
    for name in ("iteration", "env_steps"):
        if not isinstance(state[name], int) or state[name] < 0:
            raise TrainError(f"{path}: {name} is {state[name]!r}, not a count.")
    if not isinstance(state["history"], list):
        raise TrainError(f"{path}: the history is not a list of rows.")
    mine_now = trainer.state_dict()
    if set(state["learners"]) != set(trainer.learners):
        raise TrainError(f"{path} has learners for {sorted(state['learners'])}, this "
                         f"trainer for {sorted(trainer.learners)}.")
    for name, learner in trainer.learners.items():
        for part, value in mine_now["learners"][name].items():
            key = f"learners.{name}.{part}"
            theirs = state["learners"][name].get(part)
            if part in learner.optimizer_names:
                _check_optimizer(getattr(learner, part), theirs, key, path)
            else:
                _check_same_layout(value, theirs, key, path)
    _check_generator(mine_now["generator"], state["generator"], path)
    for part in ("acting", "stats", "generator", "torch_rng"):
        _check_same_layout(mine_now[part], state[part], part, path)


#: Bytes of a torch.Generator's state: the CPU's Mersenne Twister, CUDA's Philox (seed, offset).
GENERATOR_BYTES = {"the CPU": 5056, "a GPU": 16}


def _check_generator(mine, theirs, path) -> None:
    """The sampling generator's state is the device's own kind: a checkpoint trained on a GPU
    cannot go on, number for number, in a trainer on the CPU (or the other way round)."""
    where = {size: device for device, size in GENERATOR_BYTES.items()}
    saved = where.get(theirs.numel()) if isinstance(theirs, torch.Tensor) else None
    here = where.get(mine.numel())
    if saved and here and saved != here:
        raise TrainError(
            f"{path} was trained on {saved} and this trainer runs on {here}: its random "
            f"generator cannot go on here. Resume it on {saved} (Trainer.from_checkpoint("
            f"path, gpu={saved == 'a GPU'})); to watch or score its policies anywhere, "
            "wd_teach.train.playback.load_trained(path) loads them alone.")


def check_store(store, arrays: dict, path, optional=()) -> None:
    """Every array of the trainer's `store`, and no other, of the same shape and dtype:
    a checkpoint that lacks one would leave that part of the env as it is now. Only the
    `optional` ones (the env's rewritten_each_step, which no step reads first) may be
    missing."""
    wanted = {n for n in store.names if not n.endswith("_pristine")}
    missing = sorted(wanted - set(arrays) - set(optional))
    extra = sorted(set(arrays) - wanted)
    if missing:
        raise TrainError(f"{path} lacks the store array(s) {', '.join(missing)} that this "
                         "trainer's env has: the checkpoint is incomplete or of another "
                         "env version.")
    if extra:
        raise TrainError(f"{path} holds store array(s) {', '.join(extra)} that this "
                         "trainer's env does not have: it is of another env or env "
                         "version.")
    for name in sorted(wanted & set(arrays)):
        array, have = arrays[name], store[name]
        if not isinstance(array, torch.Tensor) or tuple(array.shape) != tuple(have.shape):
            shape = tuple(array.shape) if isinstance(array, torch.Tensor) else "no tensor"
            raise TrainError(f"{path} holds {name!r} of shape {shape}, this trainer "
                             f"{tuple(have.shape)}: the env's sizes differ (env.num_envs "
                             "or env.params).")
        if array.dtype != have.dtype:
            raise TrainError(f"{path} holds {name!r} as {array.dtype}, this trainer's "
                             f"store as {have.dtype}.")


def _check_same_layout(mine, theirs, key: str, path) -> None:
    """`theirs` has the layout of `mine`: the same dict keys and list lengths, tensors of
    the same shape and dtype, other values of the same type. The message names the key."""
    if isinstance(mine, torch.Tensor):
        if not isinstance(theirs, torch.Tensor):
            raise TrainError(f"{path}: {key} is {type(theirs).__name__}, a tensor is needed.")
        if tuple(theirs.shape) != tuple(mine.shape) or theirs.dtype != mine.dtype:
            raise TrainError(f"{path}: {key} is {tuple(theirs.shape)} {theirs.dtype}, this "
                             f"trainer's {tuple(mine.shape)} {mine.dtype}{_hint(key)}.")
    elif isinstance(mine, dict):
        if not isinstance(theirs, dict):
            raise TrainError(f"{path}: {key} is {type(theirs).__name__}, a dict is needed.")
        lacks, extra = set(mine) - set(theirs), set(theirs) - set(mine)
        if lacks or extra:
            raise TrainError(f"{path}: {key} does not fit this trainer's: it lacks "
                             f"{_names(lacks)} and has {_names(extra)} besides{_hint(key)}.")
        for k, value in mine.items():
            _check_same_layout(value, theirs[k], f"{key}.{k}", path)
    elif isinstance(mine, (list, tuple)):
        if not isinstance(theirs, (list, tuple)) or len(theirs) != len(mine):
            raise TrainError(f"{path}: {key} does not have this trainer's {len(mine)} "
                             "entries.")
        for i, (value, other) in enumerate(zip(mine, theirs, strict=True)):
            _check_same_layout(value, other, f"{key}.{i}", path)
    elif mine is not None and type(theirs) is not type(mine):
        raise TrainError(f"{path}: {key} is {theirs!r}, this trainer's is a "
                         f"{type(mine).__name__}.")


def _check_optimizer(optimizer: torch.optim.Optimizer, theirs, key: str, path) -> None:
    """An optimiser state that fits: as many parameter groups and parameters, and per
    parameter, moments of that parameter's shape. (A fresh optimiser has no moments yet,
    so they are compared with the parameters, not with this optimiser's state.)"""
    if not isinstance(theirs, dict) or not {"state", "param_groups"} <= set(theirs):
        raise TrainError(f"{path}: {key} is not an optimiser state.")
    groups = optimizer.param_groups
    if [len(g["params"]) for g in theirs["param_groups"]] != [len(g["params"]) for g in groups]:
        raise TrainError(f"{path}: {key} optimises other parameters than this trainer's "
                         f"{_hint(key)}.")
    params = dict(zip([i for g in theirs["param_groups"] for i in g["params"]],
                      [p for g in groups for p in g["params"]], strict=True))
    for index, moments in theirs["state"].items():
        if index not in params:
            raise TrainError(f"{path}: {key} has state for a parameter {index!r} it does not "
                             "optimise.")
        for name, value in moments.items():
            if isinstance(value, torch.Tensor) and value.dim() and value.shape != params[
                    index].shape:
                raise TrainError(f"{path}: {key}.state.{index}.{name} is "
                                 f"{tuple(value.shape)}, its parameter "
                                 f"{tuple(params[index].shape)}{_hint(key)}.")


def _hint(key: str) -> str:
    """Why a learner's layout may differ: the usual cause, said after the facts."""
    if key.startswith("learners."):
        name = key.split(".")[1]
        return (f": the policy {name!r} differs (policies.{name}.hidden, .shared or "
                ".activation, or the algorithm's settings)")
    return ""


def _names(keys: set) -> str:
    """A few names for a message, or 'nothing'."""
    shown = sorted(map(str, keys))
    return ", ".join(shown[:6]) + (", ..." if len(shown) > 6 else "") if shown else "nothing"


def _describe(groups: dict) -> str:
    return ", ".join(f"{name} ({len(agents)} agents)" for name, agents in groups.items())


# -- reading the file -------------------------------------------------------------------------


def _read_safetensors(path: Path) -> tuple[dict[str, str], dict[str, torch.Tensor]]:
    """The header's metadata and every tensor; a TrainError for a file safetensors cannot
    read (a pickle, cut short, random bytes, empty). safetensors reads only a header and raw
    bytes, so no file can make it run code."""
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError) as err:
        if _looks_like_a_pickle(path):
            raise TrainError(f"{path} is a PyTorch pickle (torch.save), not a wd-teach "
                             f"checkpoint: wd-teach reads only {SUFFIX} checkpoints, since "
                             "loading a pickle can run any code in it. Make a checkpoint "
                             "with Trainer.save() or `wd-teach train`.") from None
        raise TrainError(f"{path} is not a readable checkpoint: it is cut short, damaged or "
                         f"not a safetensors file at all ({err}).") from None
    return metadata, tensors


def _looks_like_a_pickle(path: Path) -> bool:
    """Whether a file starts as torch.save's files do: a zip archive, or a bare pickle
    (protocol 2 or later). Only asked of files safetensors could not read."""
    with open(path, "rb") as f:
        start = f.read(4)
    return start.startswith(PICKLE_STARTS)


def _join(key: str, part) -> str:
    return f"{key}.{part}" if key else str(part)
