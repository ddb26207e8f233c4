"""Sampler: every agent's action, drawn on the device from its policy's probabilities.

The policy (a torch network) gives each agent probabilities over its actions; the
environment's step kernel needs one action per agent. Drawing them on the device, one thread
per agent, keeps that hand-over on the GPU: nothing goes to the host and back. Each thread
makes one pass over its row: it adds up probabilities until the running sum passes one
uniform number u (the inverse-CDF draw), so action a comes out with probability p[a].

How probabilities reach the kernel. Kernels take their arrays by name from the store, and a
policy makes a new tensor every step. So the sampler pushes one buffer into the store when it
is built, `probs` [envs, agents, actions], and the policy's output is copied into it on the
device: `sample(probs)` does that copy (device to device, no host), or the policy writes into
`sampler.probs` itself and calls `sample()` with nothing, which skips even the copy.

Several action heads (MultiDiscrete: acceleration and turn, say, each with its own number of
actions). Give `num_actions` as a list; the heads sit side by side along the last axis of the
one buffer (`sampler.head_probs[h]` is head h's slice of it), `head_offsets` says where each
starts, and `actions` becomes [envs, agents, heads]. Each head draws its own uniform number
(its own Philox stream), so heads are independent.

Random numbers. Philox4x32-10 (wd_teach/rng/reference.py says why): each thread's whole state is its
draw count in `rng_counter` (4 bytes per agent, no allocation on the device, so it scales to
tens of millions of agents), and the seed sits in `rng_key`. `seed(s)` starts them over.

Checked mode (the default) rejects probabilities that are not probabilities before the
kernel runs: NaN, infinity, negative values, rows that do not sum to 1 within `tolerance`.
The check runs on the device with torch ops, but raising an error needs its answer on the
host: one synchronisation per call. A training loop whose probabilities come from a softmax
can turn it off with `checked=False`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from wd_teach.data import DataStore
from wd_teach.errors import ProbabilityError, SamplerError
from wd_teach.launch import MAX_THREADS_PER_BLOCK, KernelLauncher
from wd_teach.rng.reference import key_from_seed

#: The CUDA C kernels; their Numba twins are in wd_teach/sampler/kernels_numba.py.
CUDA_C_PATH = Path(__file__).parent / "kernels.cu"
#: The store names the sampler owns: the kernels' parameter names, so they bind as they are.
PROBS, ACTIONS, RNG_COUNTER, RNG_KEY = "probs", "actions", "rng_counter", "rng_key"
HEAD_OFFSETS, NUM_HEADS = "head_offsets", "num_heads"
SAMPLE_PARAMS = (PROBS, ACTIONS, RNG_COUNTER, RNG_KEY, HEAD_OFFSETS, NUM_HEADS, "num_agents")
ARGMAX_PARAMS = (PROBS, ACTIONS, HEAD_OFFSETS, NUM_HEADS, "num_agents")
#: How far from 1 a row of float32 probabilities may sum in checked mode. A float32 softmax
#: over a few thousand actions is off by well under this.
SUM_TOLERANCE = 1e-4
#: How much of a bad row an error message shows.
SHOWN_VALUES = 8


def check_probabilities(probs: torch.Tensor, head: int = 0,
                        tolerance: float = SUM_TOLERANCE) -> None:
    """Raise ProbabilityError, naming the first bad (env, agent, head), unless every row of
    `probs` [envs, agents, actions] is a probability distribution. Torch ops on the tensor's
    own device; one value comes back to the host: whether any row is bad."""
    finite = torch.isfinite(probs)
    negative = probs < 0
    off_sum = (probs.sum(dim=-1) - 1).abs() > tolerance
    bad = (~finite).any(dim=-1) | negative.any(dim=-1) | off_sum
    if not bool(bad.any()):
        return
    env, agent = (int(i) for i in bad.nonzero()[0])
    row = probs[env, agent]
    shown = ", ".join(f"{v:.4g}" for v in row[:SHOWN_VALUES].tolist())
    shown += ", ..." if row.numel() > SHOWN_VALUES else ""
    if not bool(finite[env, agent].all()):
        what = "hold NaN or infinity"
        todo = ("NaN usually means the logits overflowed or training diverged: look at the "
                "loss and the learning rate.")
    elif bool(negative[env, agent].any()):
        what = f"hold a negative value ({float(row.min()):.4g})"
        todo = "Make probabilities with torch.softmax(logits, dim=-1)."
    else:
        what = f"sum to {float(row.sum()):.6g}, not 1 (tolerance {tolerance:g})"
        todo = ("Make probabilities with torch.softmax(logits, dim=-1), or divide each row by "
                "its sum.")
    others = int(bad.sum()) - 1
    also = f" {others} other row(s) are bad too." if others else ""
    raise ProbabilityError(f"the probabilities of env {env}, agent {agent}, head {head} {what}: "
                           f"[{shown}].{also} {todo}")


class Sampler:
    """Draw actions for every agent of every environment in a DataStore, on its device.

    >>> sampler = Sampler(store, num_actions=5)            # one head of 5 actions
    >>> actions = sampler.sample(torch.softmax(logits, -1))  # store["actions"], [envs, agents]
    >>> sampler = Sampler(store, num_actions=[3, 4])       # two heads: [envs, agents, 2]
    >>> sampler.sample([probs_accel, probs_turn])

    Build it before the first kernel launch on the store: it pushes its arrays (`probs`,
    `actions` unless the store has it, `rng_counter`, `rng_key`, `head_offsets`).
    """

    def __init__(self, store: DataStore, num_actions: int | Sequence[int], *,
                 backend=None, seed: int = 0, checked: bool = True,
                 tolerance: float = SUM_TOLERANCE, max_threads: int = MAX_THREADS_PER_BLOCK):
        if not isinstance(store, DataStore):
            raise SamplerError(f"Sampler needs a DataStore, got {type(store).__name__}.")
        self.store = store
        self.num_actions = _action_counts(num_actions)
        self.checked = bool(checked)
        self.tolerance = _tolerance(tolerance)
        key_from_seed(seed)  # a bad seed is refused before anything is pushed
        self._check_names_free()
        self.launcher = KernelLauncher(store, backend, max_threads)

        with store.all_or_nothing():  # a failure below leaves the store as it was
            num_envs, num_agents = store.num_envs, store.num_agents
            offsets = np.concatenate([[0], np.cumsum(self.num_actions)]).astype(np.int32)
            store.push(PROBS, np.zeros((num_envs, num_agents, offsets[-1]), np.float32))
            if ACTIONS not in store:
                store.push(ACTIONS, np.zeros(self.actions_shape, np.int32))
            store.push(RNG_COUNTER, np.zeros((num_envs, num_agents), np.uint32))
            store.push(RNG_KEY, np.zeros(2, np.uint32), per="shared")
            store.push(HEAD_OFFSETS, offsets, per="shared")
            store.set_constant(NUM_HEADS, self.num_heads)
            self.head_probs = [store[PROBS][..., begin:end]
                               for begin, end in zip(offsets[:-1], offsets[1:], strict=True)]

            self.launcher.load(self.backend.layer_kernels(__package__))  # kernels.cu or _numba
        self.seed(seed)

    # -- what the sampler holds -------------------------------------------------------------

    @property
    def backend(self):
        """The backend its launcher runs on (wd_teach.backends)."""
        return self.launcher.backend

    @property
    def num_heads(self) -> int:
        return len(self.num_actions)

    @property
    def actions_shape(self) -> tuple[int, ...]:
        shape = (self.store.num_envs, self.store.num_agents)
        return shape if self.num_heads == 1 else (*shape, self.num_heads)

    @property
    def probs(self) -> torch.Tensor:
        """The store's probability buffer, [envs, agents, sum of num_actions]: a policy may
        write its output here in place and call `sample()`."""
        return self.store[PROBS]

    @property
    def actions(self) -> torch.Tensor:
        """The store's actions, as the last `sample()` or `argmax()` left them."""
        return self.store[ACTIONS]

    @property
    def current_seed(self) -> int:
        return self._seed

    def __repr__(self) -> str:
        heads = (f"{self.num_actions[0]} actions" if self.num_heads == 1 else
                 f"{self.num_heads} heads of {', '.join(map(str, self.num_actions))} actions")
        return (f"Sampler({self.backend}, {heads}, {self.store.num_envs} envs x "
                f"{self.store.num_agents} agents, seed {self._seed}, "
                f"{'checked' if self.checked else 'unchecked'})")

    # -- drawing ----------------------------------------------------------------------------

    def seed(self, seed: int) -> None:
        """Start the random numbers over: the same seed and probabilities give the same
        actions, on every backend. (Device writes only; no host round trip in the loop.)"""
        key = key_from_seed(seed)
        self.store[RNG_KEY].copy_(torch.from_numpy(np.array(key, dtype=np.uint32)))
        # torch has few kernels for uint32; an int32 view of the same bits has them all
        self.store[RNG_COUNTER].view(torch.int32).zero_()
        self._seed = int(seed)

    def sample(self, probs: torch.Tensor | Sequence[torch.Tensor] | None = None) -> torch.Tensor:
        """Draw one action per agent (and head) into the store's `actions`, and return it.

        `probs`: [envs, agents, actions] on the store's device, float32; a list of those, one
        per head, with several heads. None: draw from what is in `sampler.probs` already.
        """
        self._take(probs)
        self.launcher.launch("sample_actions")
        return self.actions

    def argmax(self, probs: torch.Tensor | Sequence[torch.Tensor] | None = None) -> torch.Tensor:
        """The most probable action of every agent (and head), for evaluation: no random
        numbers, and the draw counts do not move."""
        self._take(probs)
        self.launcher.launch("argmax_actions")
        return self.actions

    def _take(self, probs) -> None:
        """Check `probs` and copy them into the store's buffer, device to device."""
        heads = self.head_probs if probs is None else self._as_heads(probs)
        for head, tensor in enumerate(heads):
            self._check_layout(tensor, head)
        if self.checked:
            for head, tensor in enumerate(heads):
                check_probabilities(tensor, head, self.tolerance)
        for tensor, buffer in zip(heads, self.head_probs, strict=True):
            if not _same_memory(tensor, buffer):
                buffer.copy_(tensor)

    # -- checks at the door -----------------------------------------------------------------

    def _as_heads(self, probs) -> list[torch.Tensor]:
        if isinstance(probs, (list, tuple)):
            if len(probs) != self.num_heads:
                raise SamplerError(f"got probabilities for {len(probs)} head(s), but this "
                                   f"sampler has {self.num_heads} (of "
                                   f"{', '.join(map(str, self.num_actions))} actions).")
            return list(probs)
        if self.num_heads != 1:
            raise SamplerError(f"this sampler has {self.num_heads} heads: pass a list of "
                               f"{self.num_heads} tensors, one per head.")
        return [probs]

    def _check_layout(self, probs, head: int) -> None:
        where = f"head {head}: " if self.num_heads > 1 else ""
        want = (self.store.num_envs, self.store.num_agents, self.num_actions[head])
        if not isinstance(probs, torch.Tensor):
            raise SamplerError(f"{where}probabilities must be a torch tensor on "
                               f"{self.store.device}, got {type(probs).__name__}. Use "
                               "torch.as_tensor(p, dtype=torch.float32, "
                               f"device='{self.store.device}').")
        if probs.dtype != torch.float32:
            raise SamplerError(f"{where}probabilities are {probs.dtype}; the kernel reads "
                               "float32. Pass probs.float().")
        if not _same_device(probs.device, self.store.device):
            raise SamplerError(f"{where}probabilities are on {probs.device}, the store on "
                               f"{self.store.device}. Run the policy on {self.store.device}: "
                               "moving them each step would cost a copy between devices.")
        if tuple(probs.shape) != want:
            raise SamplerError(f"{where}probabilities have shape {tuple(probs.shape)}; want "
                               f"(num_envs, num_agents, num_actions) = {want}.")

    def _check_names_free(self) -> None:
        for name in (PROBS, RNG_COUNTER, RNG_KEY, HEAD_OFFSETS, NUM_HEADS):
            if name in self.store:
                raise SamplerError(f"the store already has {name!r}: it has a sampler "
                                   "already (use that one), or an array of the sampler's "
                                   "name (rename it).")
        if ACTIONS in self.store.constants:
            raise SamplerError(f"the store has a constant named {ACTIONS!r}; the sampler "
                               "writes actions to an array of that name. Rename the constant.")
        if ACTIONS in self.store:
            info = self.store.info(ACTIONS)
            if info.shape != self.actions_shape or info.dtype != np.int32:
                raise SamplerError(f"the store's {ACTIONS!r} is {info.dtype.name} "
                                   f"{info.shape}; the sampler writes int32 "
                                   f"{self.actions_shape}. Push it so, or let the sampler "
                                   "push it.")


def _action_counts(num_actions) -> tuple[int, ...]:
    counts = list(num_actions) if isinstance(num_actions, (list, tuple)) else [num_actions]
    if not counts:
        raise SamplerError("num_actions is empty: give one count per action head.")
    for count in counts:
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) \
                or count < 1:
            raise SamplerError(f"each head needs a whole number of actions, at least 1; got "
                               f"{num_actions!r}.")
    if sum(counts) > np.iinfo(np.int32).max:
        raise SamplerError(f"{sum(counts):,} actions in all do not fit the int32 offsets.")
    return tuple(int(c) for c in counts)


def _tolerance(tolerance) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) \
            or not math.isfinite(tolerance) or tolerance <= 0:
        raise SamplerError(f"tolerance must be a positive number, got {tolerance!r}.")
    return float(tolerance)


def _same_device(a: torch.device, b: torch.device) -> bool:
    """cuda and cuda:0 are the same device when 0 is the current one."""
    if a.type != b.type:
        return False
    if a.type != "cuda":
        return True
    current = torch.cuda.current_device()
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when `a` is the buffer `b` itself (a policy that wrote in place)."""
    return a.data_ptr() == b.data_ptr() and a.stride() == b.stride()
