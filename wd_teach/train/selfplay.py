"""Frozen groups, weights from a checkpoint, and self-play against a pool of earlier selves.

Three settings of a policy group (policies.NAME in a config) change who a group plays as:

    frozen: true      the group never updates: it plays, the others learn against it
    load: PATH        the group starts from the weights of the policy of the same name in the
                      checkpoint at PATH (a whole run's checkpoint, of the same env)
    pool: N           self-play: the group keeps up to N snapshots of its own weights, one
                      every `pool_every` iterations, and plays a rollout as a snapshot drawn
                      from them with probability `pool_play`, as itself otherwise

Why a pool: two groups that only ever meet each other's latest policy chase each other in
circles (taggers learn to corner runners who run left; runners learn to run right; taggers
follow; ...). Meeting a mixture of the opponent's past selves keeps a group from
overfitting to the latest one (fictitious self-play; AlphaStar's league is its big sibling).

A rollout in which a group played a snapshot is not that group's experience: an on-policy
learner (A2C, PPO) may only learn from what its current policy did. So the group skips the
update of that iteration, and the other groups learn from it as usual.

Swapping is done in place (`copy_` into the policy's tensors), so a rollout recorded as a
CUDA graph replays with whichever weights are in place, and the optimiser's state, which
belongs to the current weights, is never touched.
"""

from __future__ import annotations

from pathlib import Path

import torch

from wd_teach.errors import ConfigError, TrainError


class SnapshotPool:
    """Up to `size` snapshots of `policy`'s weights, taken every `every` iterations; before
    a rollout, `play()` puts one in place with probability `play_share`, and `restore()`
    puts the current weights back after it. Its draws come from its own CPU generator,
    seeded, so a run with a pool is as repeatable as one without."""

    def __init__(self, policy: torch.nn.Module, size: int, every: int, play_share: float,
                 seed: int):
        self.policy, self.size, self.every, self.play_share = policy, size, every, play_share
        self.snapshots: list[list[torch.Tensor]] = []
        self.generator = torch.Generator().manual_seed(seed)
        self._current: list[torch.Tensor] | None = None  # set while a snapshot plays
        self._saved: list[torch.Tensor] | None = None  # where they wait: made once, reused

    def _tensors(self) -> list[torch.Tensor]:
        return list(self.policy.state_dict().values())  # weights and buffers, in place

    @property
    def playing_snapshot(self) -> bool:
        return self._current is not None

    def after_iteration(self, iteration: int) -> None:
        """Take a snapshot of the current weights every `every` iterations."""
        if iteration % self.every == 0:
            self.snapshots.append([t.detach().clone() for t in self._tensors()])
            del self.snapshots[:-self.size]

    @torch.no_grad()
    def play(self) -> bool:
        """Before a rollout: a snapshot in place of the current weights (True), or not."""
        if not self.snapshots:
            return False
        if torch.rand((), generator=self.generator).item() >= self.play_share:
            return False
        which = int(torch.randint(len(self.snapshots), (), generator=self.generator))
        if self._saved is None:
            self._saved = [t.detach().clone() for t in self._tensors()]
        else:
            for saved, tensor in zip(self._saved, self._tensors(), strict=True):
                saved.copy_(tensor)
        self._current = self._saved
        for tensor, snapshot in zip(self._tensors(), self.snapshots[which], strict=True):
            tensor.copy_(snapshot)
        return True

    @torch.no_grad()
    def restore(self) -> None:
        """After the rollout: the current weights back in place."""
        if self._current is None:
            return
        for tensor, current in zip(self._tensors(), self._current, strict=True):
            tensor.copy_(current)
        self._current = None

    def state_dict(self) -> dict:
        return {"snapshots": [[t.cpu() for t in s] for s in self.snapshots],
                "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict | None) -> None:
        """A pool's state; None (a checkpoint of a run without this pool): an empty pool."""
        if state is None:
            self.snapshots = []
            return
        device = next(iter(self._tensors())).device
        self.snapshots = [[t.to(device) for t in s] for s in state["snapshots"]]
        self.generator.set_state(state["generator"])


def check_selfplay(name: str, policy) -> None:
    """policies.NAME's frozen, load, pool, pool_every and pool_play, checked together."""
    where = f"policies.{name}"
    if not isinstance(policy.frozen, bool):
        raise ConfigError(f"{where}.frozen must be true or false, got {policy.frozen!r}.")
    if policy.load is not None and not isinstance(policy.load, str):
        raise ConfigError(f"{where}.load must be a checkpoint's path, got {policy.load!r}.")
    if not isinstance(policy.pool, int) or policy.pool < 0:
        raise ConfigError(f"{where}.pool must be a whole number, 0 (no pool) or more, got "
                          f"{policy.pool!r}.")
    if not isinstance(policy.pool_every, int) or policy.pool_every < 1:
        raise ConfigError(f"{where}.pool_every must be a whole number of iterations, 1 or "
                          f"more, got {policy.pool_every!r}.")
    if not 0 <= policy.pool_play <= 1:
        raise ConfigError(f"{where}.pool_play is a probability, between 0 and 1, got "
                          f"{policy.pool_play!r}.")
    if policy.frozen and policy.pool:
        raise ConfigError(f"{where}: frozen and pool={policy.pool} together: a frozen group "
                          "never changes, so its snapshots would all be the same. Use one.")


def load_group_weights(policy: torch.nn.Module, name: str, path: str | Path,
                       env_name: str) -> None:
    """Put the weights of policy `name` of the checkpoint at `path` into `policy`: refused,
    before anything changes, if the file is not a run's checkpoint, is of another env, has
    no policy of that name, or its sizes differ."""
    from wd_teach.train.checkpoint import read_checkpoint

    state = read_checkpoint(path)
    where = f"policies.{name}.load={path}"
    if state.get("env") != env_name:
        raise TrainError(f"{where}: that is a checkpoint of {state.get('env')!r}, this run "
                         f"trains {env_name!r}. Load a checkpoint of the same env.")
    learners = state.get("learners", {})
    if name not in learners:
        raise TrainError(f"{where}: the checkpoint has policies {', '.join(sorted(learners))}, "
                         f"not {name!r}. Name the group as the run that saved it did.")
    weights = learners[name]["policy"]
    mine = policy.state_dict()
    differ = [k for k in mine if k not in weights or weights[k].shape != mine[k].shape]
    if differ or set(weights) != set(mine):
        raise TrainError(f"{where}: the checkpoint's {name!r} has other sizes or layers "
                         f"({', '.join(differ[:3]) or 'other names'}): give this group the "
                         "hidden sizes and kind of the run that saved it.")
    policy.load_state_dict(weights)
