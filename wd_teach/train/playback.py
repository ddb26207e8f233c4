"""A trained run played back: its policies on fresh games, on whatever machine is here.

Training a game long enough to see it play well takes minutes on a GPU and hours on a
laptop. So a run can be trained once, on a GPU, and its checkpoint shipped in the package
(`pretrained/`, made by `bench/train_<name>.py`); a notebook then loads it and plays it,
on a GPU or a CPU alike.

Playing needs the policies' weights and nothing else. A checkpoint holds the whole run
(every training env's state, the optimisers, the random states), so that
`Trainer.from_checkpoint` can go on training it exactly; built at the training size, that
trainer would be as large as the run. `load_trained` builds a trainer of the same config
for a few envs instead, and loads the weights and the history into it:

    trainer = load_trained(pretrained_checkpoint("tag_demo"))
    episode = trainer.evaluate(num_envs=1, record=True)   # the frames of one game
"""

from __future__ import annotations

from pathlib import Path

from wd_teach.errors import TrainError
from wd_teach.train.checkpoint import SUFFIX, read_checkpoint
from wd_teach.train.config import EnvSection, make_env, saved_run
from wd_teach.train.runs import differences
from wd_teach.train.trainer import Trainer

#: The checkpoints that ship with the package, each with its config beside it (NAME.yaml).
PRETRAINED = Path(__file__).with_name("pretrained")


def shipped_checkpoints() -> list[str]:
    """The names of the trained checkpoints in this copy of the package."""
    return sorted(path.stem for path in PRETRAINED.glob(f"*{SUFFIX}"))


def pretrained_checkpoint(name: str) -> Path:
    """The path of the shipped checkpoint `name`; a TrainError, saying how to make it,
    where this copy of the package does not have it."""
    path = PRETRAINED / f"{name}{SUFFIX}"
    if not isinstance(name, str) or not path.is_file():
        shipped = ", ".join(shipped_checkpoints()) or "none"
        raise TrainError(f"no trained checkpoint {name!r} ships with this copy of wd-teach "
                         f"(shipped: {shipped}). Make it on a GPU with "
                         f"`python bench/train_{name}.py` (it writes {path}).")
    return path


def load_trained(checkpoint: str | Path, *, num_envs: int = 1, gpu: bool | None = None,
                 backend: str | None = None, state: dict | None = None) -> Trainer:
    """A Trainer of the checkpoint's config at `num_envs` envs, with the checkpoint's
    policy weights, iteration count and history: ready to `evaluate`, on `backend` (None:
    the run's own, or where its config leaves it out, the best this machine runs). The
    training envs' state and the optimisers are not loaded; to go on training, use
    Trainer.from_checkpoint. `state`: the checkpoint, already read (wd_teach.train.runs)."""
    path = Path(checkpoint)
    state = read_checkpoint(path) if state is None else state  # a TrainError for non-checkpoints
    config, learners = state.get("config"), state.get("learners")
    if not isinstance(config, dict) or not isinstance(learners, dict):
        raise TrainError(f"{path} holds no run config or no learners: it is not a whole "
                         "wd-teach training checkpoint.")
    env = {"num_envs": num_envs, **({"backend": backend} if backend else {})}
    trainer = Trainer(saved_run(config), overrides={"env": env}, gpu=gpu)
    _check_config_kept(trainer, config, path)
    if set(learners) != set(trainer.policies):
        raise TrainError(f"{path} holds weights for {sorted(learners)}, but its config makes "
                         f"policies {sorted(trainer.policies)}: the file is damaged.")
    for name, policy in trainer.policies.items():
        try:
            policy.load_state_dict(learners[name]["policy"])
        except (KeyError, TypeError, RuntimeError) as err:
            raise TrainError(f"{path}: the weights of {name!r} do not fit the policy its "
                             f"config makes ({err}).") from None
    trainer.history = [dict(row) for row in state.get("history", [])]
    trainer.iteration = int(state.get("iteration", 0))
    trainer.env_steps = int(state.get("env_steps", 0))
    return trainer


#: What a played run may change of its config: how many envs, on which backend, and
#: where metrics would go. Everything else is the run's.
PLAYED_HERE = ("env.num_envs", "env.backend", "trainer.logger")


def _check_config_kept(trainer: Trainer, config: dict, path: Path) -> None:
    """The run's config is laid over this machine's defaults (an env's `cpu` block on a
    CPU), so a setting it lacks takes the value here. That is right for a setting newer than
    the run (its default is what the run did), but not for the env's own parameters, which
    a `cpu` block changes: refuse a config that changes, or an env that is not the run's."""
    changed = [key for key in differences(config, trainer.config.to_dict())
               if key not in PLAYED_HERE and _given(config, key)]
    section = config.get("env") or {}
    run_env = make_env(EnvSection(name=section.get("name"), params=section.get("params") or {}))
    if run_env.config != trainer.env.config:
        changed.append("env.params")
    if changed:
        raise TrainError(f"{path}: on this machine its config would change at "
                         f"{', '.join(changed)} (the env's defaults here fill in what the "
                         "run's config leaves out), so the games would not be the run's. "
                         "Train the run again with this version of wd-teach.")


def _given(config: dict, key: str) -> bool:
    """Whether the dotted `key` is set in `config`."""
    for part in key.split("."):
        if not isinstance(config, dict) or part not in config:
            return False
        config = config[part]
    return True
