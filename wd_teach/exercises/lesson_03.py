"""Checker for 03_sampler: the inverse-CDF draw of one thread, written by the learner.

The learner writes `draw(probs, u)`: given one agent's probabilities (a float32 row) and
one uniform number u in [0, 1), the action the sampler's thread picks. The checker works out
its own answer for each case with the NumPy reference (wd_teach.sampler.reference), on
edge cases first (u = 0, u just under 1, u exactly on a running sum, impossible actions, a
row that sums to a hair under 1), then on random rows with the real Philox numbers that the
sampler's threads draw.
"""

from __future__ import annotations

import numpy as np

from wd_teach.rng.reference import thread_uniforms
from wd_teach.sampler.reference import inverse_cdf

#: (what the case is about, probabilities, u): each with the hint a wrong answer earns.
EDGE_CASES = [
    ("u = 0 with p[0] > 0", [0.2, 0.3, 0.5], 0.0,
     "the first action whose running sum is above u wins: compare u < sum."),
    ("u just under 1", [0.2, 0.3, 0.5], 1 - 2**-24,
     "the last action's running sum is 1, and u < 1 always."),
    ("u exactly on a running sum", [0.25, 0.25, 0.5], 0.25,
     "u = 0.25 is not below the first running sum (0.25), so action 0 does not win: use "
     "u < sum, not u <= sum."),
    ("an impossible first action", [0.0, 0.4, 0.6], 0.0,
     "an action with p = 0 must never be drawn: its running sum equals the one before, and "
     "u < sum fails for it."),
    ("an impossible last action", [0.5, 0.5, 0.0], 0.75, "p = 0 is never drawn."),
    ("a row a hair short of 1", [0.3, 0.3, 0.3999999, 0.0], 0.9999999,
     "when u is past the whole row (its sum is a rounding error under 1), take the last "
     "action with p > 0, not simply the last action."),
]


def check_draw(draw) -> bool:
    """Check the learner's `draw(probs, u) -> action` against the reference."""
    if draw is None:
        print("Not yet: write draw(probs, u).")
        return False
    for about, row, u, hint in EDGE_CASES:
        row = np.array(row, np.float32)
        if not _agrees(draw, row, np.float32(u), f"{about}", hint):
            return False
    rng = np.random.default_rng()
    envs, agents, actions = 8, 16, 5
    probs = rng.dirichlet(np.ones(actions), size=(envs, agents)).astype(np.float32)
    u = thread_uniforms(int(rng.integers(2**32)), np.zeros((envs, agents), np.uint32))[..., 0]
    for env in range(envs):
        for agent in range(agents):
            if not _agrees(draw, probs[env, agent], u[env, agent],
                           f"env {env}, agent {agent} with the sampler's own u",
                           "walk the row from action 0, adding p as you go, and stop at the "
                           "first action where u < the running sum."):
                return False
    print(f"All right: your draw agrees with the sampler on {len(EDGE_CASES)} edge cases and "
          f"{envs * agents} random agents. It is the loop of draw_from_cdf in sampler/kernels.cu "
          "and sampler_numba.py.")
    return True


def _agrees(draw, row: np.ndarray, u: np.float32, about: str, hint: str) -> bool:
    want = int(inverse_cdf(row, np.asarray(u, np.float32)))
    try:
        got = draw(row.copy(), u)
    except Exception as err:  # the learner's code may fail in any way; say how
        print(f"{about}: draw([{_show(row)}], {float(u):.8g}) raised {type(err).__name__}: "
              f"{err}")
        return False
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
        print(f"{about}: draw returned {got!r}; it should return an action, a whole number.")
        return False
    if got != want:
        print(f"{about}: for probs [{_show(row)}] and u = {float(u):.8g}, "
              f"draw gave {got}; the sampler draws {want}.\nHint: {hint}")
        return False
    return True


def _show(row: np.ndarray) -> str:
    return ", ".join(f"{p:.7g}" for p in row)
