"""Evaluation: the trained policies play the first episode of fresh envs.

An evaluation steps its envs with the rollout's own loop (wd_teach/train/rollout.py), not a
second copy of it: rollouts that together take `steps` steps, each no bigger in memory than
a training rollout (`in_rollouts`). Their acting is `Playing`, which wraps the trained
policies' acting: the most probable actions (greedy) or drawn ones, and uniformly random
ones for the groups named as the baseline. What the evaluation keeps (each env's first
episode, and env 0's frames) is taken in `Playing.after_step`, the moment a rollout gives
its acting between the env's step and the reset of the finished envs.

    result = trainer.evaluate(num_envs=32)                  # Trainer.evaluate calls this
    result.metrics["cart/return"]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import TrainError
from wd_teach.ranges import require_whole
from wd_teach.train.acting import make_acting, random_actions
from wd_teach.train.metrics import EpisodeStats
from wd_teach.train.rollout import Rollout

#: Fresh episodes `wd-teach train` plays at the end, and `wd-teach play` by default.
EVALUATION_EPISODES = 100


@dataclass
class Evaluation:
    """What `Trainer.evaluate` found: per-group mean returns over each env's first
    episode (`metrics`, keys as in the history), and the recorded frames of env 0."""

    metrics: dict[str, float]
    frames: dict[str, np.ndarray] = field(default_factory=dict)
    num_envs: int = 0
    greedy: bool = True
    random: tuple[str, ...] = ()
    # The settings it played with, so that a reader can see none differs from training's.
    steps: int = 0  # steps played: one episode's length unless asked otherwise
    seed: int = 0
    backend: str = ""
    precision: str = "fp32"  # the policy's matmuls, as trainer.precision trained them

    def describe(self) -> str:
        """One line of the scores, as `wd-teach train` and `wd-teach play` print them."""
        shown = ", ".join(f"{name} {value:.4g}" for name, value in self.metrics.items()
                          if name != "episodes" and not name.endswith("/reward"))
        actions = "most probable actions" if self.greedy else "actions drawn from the policy"
        return f"evaluated on {self.num_envs} fresh episodes, {actions}: {shown}"


class Playing:
    """The acting of an evaluation, for a Rollout: the policies' `acting`, played greedily
    or by drawing; the `random` groups act uniformly at random. After each step it adds up
    each env's first episode (`stats`) and keeps env 0's `frames` arrays."""

    graph_safe = False  # a few steps at a time, with the host recording between them

    def __init__(self, acting, greedy: bool, random_groups, generator: torch.Generator,
                 frames=()):
        self.acting, self.greedy, self.generator = acting, greedy, generator
        self.random_groups, self.policies = list(random_groups), acting.policies
        self.wrapper = wrapper = acting.wrapper
        self.metrics = wrapper.env.episode_metrics()
        self.stats = EpisodeStats(wrapper.num_envs, wrapper.num_agents, wrapper.device,
                                  self.metrics)
        self.playing = torch.ones(wrapper.num_envs, dtype=torch.bool, device=wrapper.device)
        self.frames = {n: [wrapper.store[n][0].clone()] for n in frames}
        self.ended = []  # env 0's done flag after each step

    def action_width(self) -> int:
        return self.acting.action_width()

    def action_dtype(self) -> torch.dtype:
        return self.acting.action_dtype()

    def forward(self, obs, values=None, state=None):
        self.acting.forward(obs)  # playing needs no critic's values (nor its global state)

    def draw(self, actions, log_probs):
        if self.greedy:
            self.acting.greedy()
        else:
            self.acting.draw(actions, log_probs)
        for group in self.random_groups:
            random_actions(self.wrapper, group, self.generator)

    def after_step(self, done: torch.Tensor) -> None:
        """After the env's step, before the finished envs restart: only the first episode
        of each env counts, and env 0's state is a frame."""
        self.acting.after_step(done)
        store, playing = self.wrapper.store, self.playing
        self.stats.update(self.wrapper.rewards * playing[:, None], done & playing,
                          {name: m.read(store) for name, m in self.metrics.items()})
        for name, kept in self.frames.items():
            kept.append(store[name][0].clone())
        self.ended.append(done[0].clone())
        playing &= ~done

    def kept_frames(self) -> dict[str, np.ndarray]:
        """env 0's frames, the start included, up to the end of its first episode."""
        if not self.frames:
            return {}
        end = torch.stack(self.ended).cpu().numpy()
        last = int(np.argmax(end)) + 1 if end.any() else len(end)
        return {n: torch.stack(kept[:last + 1]).cpu().numpy() for n, kept in self.frames.items()}


def in_rollouts(wrapper, playing: Playing, steps: int, most: int,
                precision: str = "fp32") -> list[Rollout]:
    """Rollouts that take `steps` steps in all, each at most `most` steps long (the last one
    may be shorter), so that their buffers are no bigger than a training rollout's. The same
    Rollout is collected again where it can be. `precision`: the policy's matmuls, as
    training ran them (trainer.precision): a policy trained in bf16 is judged in bf16."""
    chunk = max(1, min(steps, most))
    rollouts = [Rollout(wrapper, playing, chunk, precision=precision)] * (steps // chunk)
    if steps % chunk:
        rollouts.append(Rollout(wrapper, playing, steps % chunk, precision=precision))
    return rollouts


def _checked(trainer, num_envs, steps, seed) -> tuple[int, int, int]:
    """Leave one out for its default (the training envs' count, one episode's length, the
    trainer's seed + 1); given, each must be a whole number in range. 0 is refused, not
    read as "the default": an evaluation of no envs or no steps has nothing to report."""
    num_envs = (trainer.wrapper.num_envs if num_envs is None else
                require_whole("evaluate: num_envs", num_envs, low=1, high=2**31,
                              error=TrainError))
    steps = (trainer.env.episode_length if steps is None else
             require_whole("evaluate: steps", steps, low=1, high=2**31, error=TrainError))
    seed = (trainer.seed + 1 if seed is None else
            require_whole("evaluate: seed", seed, low=0, high=2**64, error=TrainError))
    return num_envs, steps, seed


@torch.no_grad()
def play_first_episodes(trainer, num_envs: int | None = None, steps: int | None = None, *,
                        greedy: bool = True, random: tuple[str, ...] = (),
                        record: bool = False, seed: int | None = None,
                        backend: str | None = None) -> Evaluation:
    """`trainer`'s policies play the first episode of `num_envs` fresh envs; see
    Trainer.evaluate. The training envs are not touched."""
    num_envs, steps, seed = _checked(trainer, num_envs, steps, seed)
    unknown = sorted(set(random) - {g.name for g in trainer.groups})
    if unknown:
        raise TrainError(f"random={unknown}: no such policy. Policies: "
                         f"{', '.join(g.name for g in trainer.groups)}.")
    wrapper = EnvWrapper(trainer.env, num_envs, backend or trainer.backend, seed=seed,
                         auto_reset=False, check_actions=False)
    generator = torch.Generator(device=wrapper.device).manual_seed(seed)
    policies = [trainer.policies[g.name] for g in trainer.groups]
    acting = make_acting(wrapper, trainer.groups, policies, seed, generator)
    for policy in policies:
        policy.to(wrapper.device)
    frames = ([n for n in trainer.env.frame_arrays() if n in wrapper.store.names]
              if record else [])
    playing = Playing(acting, greedy, [g for g in trainer.groups if g.name in random],
                      generator, frames)
    most = trainer.rollout.buffer.steps * trainer.wrapper.num_envs // num_envs
    precision = trainer.config.trainer.precision
    rollouts = in_rollouts(wrapper, playing, steps, most, precision)
    wrapper.reset()
    for rollout in rollouts:
        rollout.collect()
    for policy in policies:
        policy.to(trainer.device)
    values = playing.stats.device_values(trainer.groups, num_envs)
    pulled = dict(zip(values, torch.stack(list(values.values())).cpu().tolist(),
                      strict=True))
    return Evaluation(metrics=pulled, frames=playing.kept_frames(), num_envs=num_envs,
                      greedy=greedy, random=tuple(random), steps=steps, seed=seed,
                      backend=str(wrapper.backend), precision=precision)
