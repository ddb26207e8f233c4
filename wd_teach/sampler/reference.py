"""NumPy twins of the sampler's kernels, and the chi-square test that checks their draws.

The reference draws what the kernels draw, bit for bit: the same Philox numbers
(wd_teach/rng/reference.py), the same float32 running sum, the same rule for a row that sums
to a hair under 1. Tests and notebooks compare every backend with it; the chi-square test
then checks that what all of them draw follows the probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from wd_teach.errors import SamplerError
from wd_teach.rng.reference import thread_uniforms


def as_heads(probs) -> list[np.ndarray]:
    """One float32 array [envs, agents, actions] per head, from one array or a list of them."""
    heads = list(probs) if isinstance(probs, (list, tuple)) else [probs]
    return [np.asarray(p, dtype=np.float32) for p in heads]


def inverse_cdf(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The first action whose running sum passes u; past the end of a row that sums to a
    hair under 1, the last action with p > 0 (0 when there is none)."""
    cumulative = np.cumsum(probs, axis=-1, dtype=np.float32)  # left to right, as a thread adds
    passed = u[..., None] < cumulative
    first_passed = passed.argmax(axis=-1)
    possible = probs > 0
    last_possible = probs.shape[-1] - 1 - possible[..., ::-1].argmax(axis=-1)
    last_possible = np.where(possible.any(axis=-1), last_possible, 0)
    return np.where(passed.any(axis=-1), first_passed, last_possible).astype(np.int32)


def reference_sample(probs, seed: int, draws: np.ndarray) -> np.ndarray:
    """The actions the sampler draws: `probs` one array or one per head, `draws` each thread's
    draw count before the launch (the store's rng_counter). [envs, agents] with one head,
    [envs, agents, heads] with several."""
    heads = as_heads(probs)
    u = thread_uniforms(seed, draws, num_streams=len(heads))
    actions = np.stack([inverse_cdf(p, u[..., h]) for h, p in enumerate(heads)], axis=-1)
    return actions[..., 0] if len(heads) == 1 else actions


def reference_argmax(probs) -> np.ndarray:
    """The most probable action of each agent and head (the first of equals)."""
    heads = as_heads(probs)
    actions = np.stack([p.argmax(axis=-1).astype(np.int32) for p in heads], axis=-1)
    return actions[..., 0] if len(heads) == 1 else actions


def count_actions(actions: np.ndarray, num_actions: int) -> np.ndarray:
    """How often each action was drawn, along a new last axis: actions [draws, ...] ->
    counts [..., num_actions]."""
    actions = np.asarray(actions)
    return np.stack([(actions == a).sum(axis=0) for a in range(num_actions)], axis=-1)


@dataclass(frozen=True)
class GoodnessOfFit:
    """Pearson's chi-square test of drawn counts against their probabilities."""

    statistic: float
    dof: int
    critical: float
    alpha: float

    @property
    def passed(self) -> bool:
        return self.statistic <= self.critical

    def __str__(self) -> str:
        verdict = "consistent with" if self.passed else "NOT consistent with"
        return (f"chi-square {self.statistic:.1f} on {self.dof} degrees of freedom, critical "
                f"value {self.critical:.1f} at alpha={self.alpha:g}: the draws are {verdict} "
                "the probabilities")


def chi_square_critical(dof: int, alpha: float) -> float:
    """The chi-square value that `dof` degrees of freedom exceed with probability `alpha`.

    The chance of exceeding x is the regularized upper incomplete gamma function
    Q(dof / 2, x / 2) (torch.special.gammaincc), which falls as x grows: halving an interval
    that holds the answer pins it down.
    """
    if dof < 1:
        raise SamplerError(f"a chi-square test needs at least one degree of freedom, got {dof}.")
    if not 0 < alpha < 1:
        raise SamplerError(f"alpha is a probability in (0, 1), got {alpha}.")

    def exceed(x: float) -> float:
        half = torch.tensor([dof / 2, x / 2], dtype=torch.float64)
        return float(torch.special.gammaincc(half[0], half[1]))

    low, high = 0.0, float(dof)
    while exceed(high) > alpha:
        low, high = high, 2 * high
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if exceed(middle) > alpha else (low, middle)
    return (low + high) / 2


def chi_square_test(counts, probs, alpha: float = 1e-3) -> GoodnessOfFit:
    """Test counts [..., actions] against probabilities of the same shape, each row on its own
    (statistics and degrees of freedom add up over rows). An action with p = 0 that was drawn
    fails the test outright."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    counts, probs = np.broadcast_arrays(counts, probs)
    counts = counts.reshape(-1, counts.shape[-1])
    probs = probs.reshape(-1, probs.shape[-1])
    expected = counts.sum(axis=-1, keepdims=True) * probs / probs.sum(axis=-1, keepdims=True)
    possible = expected > 0
    dof = int((possible.sum(axis=-1) - 1).sum())
    if (counts[~possible] > 0).any():
        statistic = float("inf")
    else:
        statistic = float(((counts - expected) ** 2 / np.where(possible, expected, 1.0)).sum())
    return GoodnessOfFit(statistic, dof, chi_square_critical(dof, alpha), alpha)


class ReferenceSampler:
    """The Sampler's NumPy twin as an object, for environments on the NumPy backend.

    There no kernel runs, so this draws with `reference_sample` instead, on the CPU: the same
    Philox numbers, so the same actions as the kernels would draw from the same seed and
    probabilities. It pushes the arrays the kernel Sampler pushes (probs, rng_counter,
    rng_key, head_offsets), so a store looks the same whichever drew its actions, and has
    the same `probs`, `head_probs`, `actions`, `sample()`, `argmax()` and `seed()`.
    """

    def __init__(self, store, num_actions, *, seed: int = 0):
        from wd_teach.sampler.sampler import (
            ACTIONS,
            HEAD_OFFSETS,
            NUM_HEADS,
            PROBS,
            RNG_COUNTER,
            RNG_KEY,
            _action_counts,
        )

        if store.device.type != "cpu":
            raise SamplerError(f"the reference sampler draws on the CPU; this store is on "
                               f"{store.device}. Use wd_teach.Sampler there.")
        self.store = store
        self.num_actions = _action_counts(num_actions)
        self._names = (PROBS, ACTIONS, RNG_COUNTER, RNG_KEY)
        num_envs, num_agents = store.num_envs, store.num_agents
        offsets = np.concatenate([[0], np.cumsum(self.num_actions)]).astype(np.int32)
        store.push(PROBS, np.zeros((num_envs, num_agents, offsets[-1]), np.float32))
        if ACTIONS not in store:
            heads = len(self.num_actions)
            shape = (num_envs, num_agents) if heads == 1 else (num_envs, num_agents, heads)
            store.push(ACTIONS, np.zeros(shape, np.int32))
        store.push(RNG_COUNTER, np.zeros((num_envs, num_agents), np.uint32))
        store.push(RNG_KEY, np.zeros(2, np.uint32), per="shared")
        store.push(HEAD_OFFSETS, offsets, per="shared")
        store.set_constant(NUM_HEADS, len(self.num_actions))
        self.head_probs = [store[PROBS][..., begin:end]
                           for begin, end in zip(offsets[:-1], offsets[1:], strict=True)]
        self.seed(seed)

    @property
    def probs(self) -> torch.Tensor:
        return self.store[self._names[0]]

    @property
    def actions(self) -> torch.Tensor:
        return self.store[self._names[1]]

    @property
    def current_seed(self) -> int:
        return self._seed

    def seed(self, seed: int) -> None:
        from wd_teach.rng.reference import key_from_seed

        key = key_from_seed(seed)
        self.store[self._names[3]].numpy()[:] = key
        self.store[self._names[2]].numpy()[:] = 0
        self._seed = int(seed)

    def sample(self, probs=None) -> torch.Tensor:
        self._take(probs)
        counter = self.store[self._names[2]].numpy()
        drawn = reference_sample([p.numpy() for p in self.head_probs], self._seed, counter)
        counter += np.uint32(1)
        self.actions.numpy()[...] = drawn.reshape(self.actions.shape)
        return self.actions

    def argmax(self, probs=None) -> torch.Tensor:
        self._take(probs)
        chosen = reference_argmax([p.numpy() for p in self.head_probs])
        self.actions.numpy()[...] = chosen.reshape(self.actions.shape)
        return self.actions

    def _take(self, probs) -> None:
        if probs is None:
            return
        heads = list(probs) if isinstance(probs, (list, tuple)) else [probs]
        if len(heads) != len(self.head_probs):
            raise SamplerError(f"got probabilities for {len(heads)} head(s), but this "
                               f"sampler has {len(self.head_probs)}.")
        for tensor, buffer in zip(heads, self.head_probs, strict=True):
            buffer.copy_(tensor)
