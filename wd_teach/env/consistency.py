"""Do the backends agree? Step them side by side and find where they part.

An env's step is written three times (CUDA C, Numba, NumPy), and a slip in one of them
rarely crashes: it makes numbers that are a little off, and a policy trained on them learns
the wrong game. So `check_consistency` runs the NumPy reference and the kernel backends from
one initial state with one sequence of random actions, and after every step compares every
array of the store. The report gives, per array, the largest difference seen, and the first
place (step, array, env, agent) where a backend left the tolerance: that is where to look.

Integer arrays (flags, counters, headings) must agree exactly. Floats must agree within the
env's `tolerance`, which says why it is what it is (a GPU's cosf, say, is not numpy's cos).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from gymnasium import spaces

from wd_teach.backends import ALL as ENV_BACKENDS
from wd_teach.backends import NUMPY, Backend
from wd_teach.device import discover
from wd_teach.env import Env, Tolerance
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach.launch import MAX_THREADS_PER_BLOCK

#: The done flags as `step` returned them, before the reset lowered the store's.
RETURNED_DONE = "done (returned)"


@dataclass(frozen=True)
class Divergence:
    """The first value of a backend that is outside the tolerance."""

    backend: str
    array: str
    step: int
    index: tuple[int, ...]
    got: float
    want: float
    reference: str

    def __str__(self) -> str:
        where = ", ".join(str(i) for i in self.index)
        return (f"step {self.step}, {self.array}[{where}]: {self.backend} has {self.got!r}, "
                f"{self.reference} has {self.want!r}")


@dataclass
class ConsistencyReport:
    """What `check_consistency` found. `largest[backend][array]` holds the largest
    difference from the reference after each step (a float array, one value per step)."""

    env: str
    reference: str
    backends: list[str]
    num_envs: int
    steps: int
    tolerance: Tolerance
    arrays: list[str]
    dtypes: dict[str, str]
    largest: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    first_bad_step: dict[str, dict[str, int]] = field(default_factory=dict)
    divergence: dict[str, Divergence | None] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every backend stayed within the tolerance at every step."""
        return all(d is None for d in self.divergence.values())

    def table(self) -> str:
        lines = [f"{self.env}: {', '.join(self.backends)} against {self.reference}, "
                 f"{self.num_envs} envs, {self.steps} steps",
                 f"floats within {self.tolerance}; integers exactly", ""]
        width = max(len(a) for a in [*self.arrays, "array"])
        head = f"{'array':<{width}}  {'dtype':<8}" + "".join(
            f"  {b + ' largest diff':>24}" for b in self.backends)
        lines += [head, "-" * len(head)]
        for array in self.arrays:
            row = f"{array:<{width}}  {self.dtypes[array]:<8}"
            for backend in self.backends:
                value = float(self.largest[backend][array].max(initial=0.0))
                bad = self.first_bad_step[backend].get(array)
                text = "0" if value == 0 else f"{value:.3g}"
                text += f"  OUT at step {bad}" if bad is not None else ""
                row += f"  {text:>24}"
            lines.append(row)
        lines.append("")
        for backend in self.backends:
            found = self.divergence[backend]
            if found is None:
                lines.append(f"{backend}: agrees with {self.reference} at every step.")
            else:
                also = [a for a, s in self.first_bad_step[backend].items()
                        if s == found.step and a != found.array]
                lines.append(f"{backend}: first divergence at {found}"
                             + (f"; at that step also {', '.join(also)}" if also else "")
                             + ".")
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Raise AssertionError with the table unless every backend agreed."""
        if not self.ok:
            raise AssertionError("the backends disagree:\n" + self.table())

    def __repr__(self) -> str:
        return self.table()


def random_action_sequence(env: Env, num_envs: int, steps: int,
                           seed: int = 0) -> list[np.ndarray]:
    """`steps` arrays of uniformly random actions, made on the host from `seed`."""
    rng = np.random.default_rng(seed)
    space, shape = env.action_space, env.action_shape(num_envs)
    sequence = []
    for _ in range(steps):
        if isinstance(space, spaces.Box):
            actions = rng.uniform(space.low, space.high, shape).astype(np.float32)
        elif isinstance(space, spaces.Discrete):
            actions = rng.integers(0, space.n, shape).astype(np.int32)
        else:
            actions = np.stack([rng.integers(0, n, shape[:-1]) for n in space.nvec],
                               axis=-1).astype(np.int32)
        sequence.append(actions)
    return sequence


def check_consistency(env: Env, backends=None, *, num_envs: int = 2, steps: int = 10,
                      seed: int = 0, tolerance: Tolerance | None = None,
                      max_threads: int = MAX_THREADS_PER_BLOCK,
                      actions: list[np.ndarray] | None = None) -> ConsistencyReport:
    """Step `env` on each of `backends` (the first is the reference; by default NumPy, then
    every kernel backend this machine runs) from the same initial state (`seed`) with the
    same actions, and compare every array after every step.

    `max_threads` below the number of agents splits each environment over several blocks.
    `actions` (a list of host arrays, one per step) replaces the random ones.
    """
    backends = list(backends) if backends is not None else [NUMPY, *discover().backends]
    # a backend object outside the list (the checkers' CUDA C on the CPU) is taken as given
    unknown = [b for b in backends if not isinstance(b, Backend) and b not in ENV_BACKENDS]
    if unknown or len(backends) < 2:
        raise EnvError(f"check_consistency compares two or more of {', '.join(ENV_BACKENDS)}; "
                       f"got {backends}.")
    if actions is None:
        actions = random_action_sequence(env, num_envs, steps, seed)
    tolerance = tolerance or env.tolerance
    wrappers = {b: EnvWrapper(env, num_envs, b, seed=seed, max_threads=max_threads)
                for b in backends}
    reference, others = backends[0], backends[1:]
    names = [*wrappers[reference].store.names, RETURNED_DONE]
    dtypes = {n: wrappers[reference].store.info(n).dtype.name for n in names[:-1]}
    dtypes[RETURNED_DONE] = "bool"
    report = ConsistencyReport(type(env).__name__, reference, others, num_envs, len(actions),
                               tolerance, names, dtypes)
    for backend in others:
        report.largest[backend] = {n: np.zeros(len(actions)) for n in names}
        report.first_bad_step[backend] = {}
        report.divergence[backend] = None

    for step, step_actions in enumerate(actions, start=1):
        results = {b: _snapshot(w, step_actions) for b, w in wrappers.items()}
        want = results[reference]
        for backend in others:
            for name in names:
                _compare(report, backend, name, step, results[backend][name], want[name])
    return report


def _snapshot(wrapper: EnvWrapper, actions: np.ndarray) -> dict[str, np.ndarray]:
    """Step once, then host copies of every array (and of the returned done flags)."""
    _, _, done, _ = wrapper.step(actions)
    arrays = {name: wrapper.store.pull(name) for name in wrapper.store.names}
    arrays[RETURNED_DONE] = done.cpu().numpy().copy()
    return arrays


def _compare(report: ConsistencyReport, backend: str, name: str, step: int,
             got: np.ndarray, want: np.ndarray) -> None:
    if got.shape != want.shape:
        raise EnvError(f"{backend} has {name!r} of shape {got.shape}, {report.reference} "
                       f"{want.shape}: the backends do not build the same store.")
    if np.issubdtype(want.dtype, np.floating):
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        both_nan = np.isnan(got) & np.isnan(want)
        diff = np.where(both_nan, 0.0, diff)
        limit = report.tolerance.atol + report.tolerance.rtol * np.abs(want.astype(np.float64))
        bad = ~(diff <= limit)  # NaN in one of them is bad
        diff = np.where(np.isnan(diff), np.inf, diff)
    else:
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64)).astype(np.float64)
        bad = diff != 0
    report.largest[backend][name][step - 1] = diff.max(initial=0.0)
    if not bad.any() or name in report.first_bad_step[backend]:
        return
    report.first_bad_step[backend][name] = step
    found = report.divergence[backend]
    if found is None or step < found.step:
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        report.divergence[backend] = Divergence(backend, name, step, index, got[index].item(),
                                                want[index].item(), report.reference)
