"""`wd-teach play RUN`: a trained run's policies on fresh games, with the run's own settings.

A learning curve that climbed while the policy, watched afterwards, plays badly is often an
evaluation that ran with other settings than training: another precision, drawn instead of
most probable actions, another episode length or other env parameters. So play takes every
setting from the run, and says for each what it used and where that came from: the run's
config, the training's own evaluation, or an option the user gave. With the defaults its
scores are the ones `wd-teach train` printed at its end (the same Trainer.evaluate, the same
games), and its video is of the first of those games.

    run = open_run("runs/cartpole")            # a run's folder, checked (wd_teach.train.runs)
    played = play_run(run, episodes=100)
    print(played.settings_table())
    print(played.evaluation.describe())
"""

from __future__ import annotations

from dataclasses import dataclass

from wd_teach import backends
from wd_teach.errors import TrainError, WdTeachError
from wd_teach.ranges import require_whole
from wd_teach.train.evaluation import EVALUATION_EPISODES, Evaluation
from wd_teach.train.playback import load_trained
from wd_teach.train.runs import Run
from wd_teach.train.trainer import Trainer
from wd_teach.train.video import draws

#: Where a setting comes from when nothing else says: what `wd-teach train` did at its end.
TRAINING_EVALUATION = "the training's evaluation"


@dataclass(frozen=True)
class Setting:
    """One setting a play used: its value and where the value came from."""

    name: str
    value: str
    source: str


@dataclass
class Played:
    """What `play_run` did: the evaluation (scores and env 0's frames), the settings it used
    with their sources, and the trainer that holds the run's policies and env."""

    evaluation: Evaluation
    settings: list[Setting]
    trainer: Trainer

    def settings_table(self) -> str:
        width = max(len(s.name) for s in self.settings)
        value = max(len(s.value) for s in self.settings)
        return "\n".join(f"  {s.name:<{width}}  {s.value:<{value}}  from {s.source}"
                         for s in self.settings)


def check_backend(run: Run, backend: str | None) -> None:
    """Refuse, before anything is built, a backend that cannot run here: the one asked
    for, or where none is asked for, the one the run's config names."""
    named = backend or (run.config.get("env") or {}).get("backend")
    if named is None:
        return  # this machine's best, whatever it is
    try:
        backends.get(named)
    except WdTeachError as err:
        whose = "--backend" if backend else f"the run's config (env.backend: {named})"
        raise TrainError(f"{whose}: {err} To play here, give --backend with one of "
                         f"{', '.join(b.name for b in backends.ALL)} that runs on this "
                         "machine (numpy runs everywhere).") from None


def play_run(run: Run, episodes: int | None = None, *, backend: str | None = None,
             seed: int | None = None, greedy: bool = True, record: bool = True) -> Played:
    """The run's policies play the first episode of `episodes` fresh envs (default: as many
    as `wd-teach train` scores), on `backend` (default: the run's), from `seed` (default:
    the training's evaluation's), most probable actions unless not `greedy`; with `record`,
    env 0's frames are kept, when its env draws its games."""
    if episodes is not None:
        require_whole("episodes", episodes, low=1, high=2**31, error=TrainError)
    check_backend(run, backend)
    count = EVALUATION_EPISODES if episodes is None else episodes
    trainer = load_trained(run.checkpoint, num_envs=count, backend=backend, state=run.state)
    evaluation = trainer.evaluate(num_envs=count, greedy=greedy, seed=seed,
                                  record=record and draws(trainer.env))
    given = {"episodes": episodes is not None, "backend": backend is not None,
             "seed": seed is not None, "sample": not greedy}
    return Played(evaluation, settings_used(run, trainer, evaluation, given), trainer)


def settings_used(run: Run, trainer: Trainer, evaluation: Evaluation,
                  given: dict[str, bool]) -> list[Setting]:
    """Each setting that decides what the games are, with where its value came from:
    `given` says which the user gave (--episodes, --backend, --seed, --sample)."""
    env = run.config.get("env") or {}
    params = env.get("params") or {}
    run_s = lambda key: f"the run's config ({key})"
    option = lambda flag, otherwise: f"--{flag}" if given[flag] else otherwise
    length = (run_s("env.params.episode_length") if "episode_length" in params else
              f"{type(trainer.env).__name__}'s default (not in the run's config)")
    backend = (run_s("env.backend") if env.get("backend") else
               "this machine's best (env.backend not in the run's config)")
    precision = evaluation.precision
    if trainer.device.type != "cuda" and precision != "fp32":
        precision += " (a GPU's; fp32 here, as training on a CPU)"
    actions = "most probable" if evaluation.greedy else "drawn from the policy"
    return [
        Setting("env", str(env.get("name")), run_s("env.name")),
        Setting("env params", _params(trainer.env.config, params),
                run_s("env.params") + "; the rest the env's defaults"),
        Setting("episode length", str(trainer.env.episode_length), length),
        Setting("steps played", str(evaluation.steps),
                f"{TRAINING_EVALUATION} (one episode's length)"),
        Setting("precision", precision, run_s("trainer.precision")),
        Setting("actions", actions, "--sample" if given["sample"] else
                f"{TRAINING_EVALUATION} (most probable)"),
        Setting("episodes", str(evaluation.num_envs),
                option("episodes", f"{TRAINING_EVALUATION} ({EVALUATION_EPISODES})")),
        Setting("seed", str(evaluation.seed),
                option("seed", f"{TRAINING_EVALUATION} (trainer.seed + 1)")),
        Setting("backend", evaluation.backend, option("backend", backend)),
        Setting("checkpoint", run.checkpoint.name,
                f"{run.folder} (iteration {trainer.iteration})"),
    ]


def _params(env_config, given: dict) -> str:
    """The env parameters the run's config sets, as the env holds them."""
    shown = [f"{key}={getattr(env_config, key)!r}" for key in given
             if hasattr(env_config, key)]
    return ", ".join(shown) or "none set"
