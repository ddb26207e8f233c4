"""Checker for 07_training: generalised advantage estimation, written by the learner.

The learner writes `advantages(rewards, values, dones, last_values, gamma, lam)`: tensors
[steps, envs, agents] but `last_values` [envs, agents] (the critic's values after the last
step); `dones[t]` is 1 where the episode ended with step t. The checker works the answer out
itself, one number at a time, straight from the definition

    delta_t = r_t + gamma * V_{t+1} * (1 - done_t) - V_t
    A_t     = delta_t + gamma * lam * (1 - done_t) * A_{t+1}

and compares on random rollouts and on the cases that trip people: an episode that ends
mid-rollout, lam = 1 (discounted returns), lam = 0 (one-step TD errors).
"""

from __future__ import annotations

import torch

from wd_teach.exercises.verdict import verdict_of


def reference_advantages(rewards, values, dones, last_values, gamma, lam) -> torch.Tensor:
    """GAE by the definition, element by element in float64: slow, plain, unmistakable."""
    steps, envs, agents = rewards.shape
    out = torch.zeros(rewards.shape, dtype=torch.float64)
    for e in range(envs):
        for a in range(agents):
            carried = 0.0
            for t in reversed(range(steps)):
                alive = 1.0 - float(dones[t, e, a])
                after = float(last_values[e, a]) if t == steps - 1 else float(values[t + 1, e, a])
                delta = float(rewards[t, e, a]) + gamma * after * alive - float(values[t, e, a])
                carried = delta + gamma * lam * alive * carried
                out[t, e, a] = carried
    return out


def cases():
    """(what the case tries, rewards, values, dones, last_values, gamma, lam)."""
    g = torch.Generator().manual_seed(7)
    shape = (6, 3, 2)
    rewards = torch.randn(shape, generator=g)
    values = torch.randn(shape, generator=g)
    last = torch.randn(shape[1:], generator=g)
    no_end = torch.zeros(shape)
    yield "no episode ends in the rollout", rewards, values, no_end, last, 0.99, 0.95
    ends = no_end.clone()
    ends[2, 0] = 1
    ends[4, 1] = 1
    ends[5, 2] = 1
    yield "episodes that end mid-rollout (and at its last step)", rewards, values, ends, last, \
        0.99, 0.95
    yield "lam = 1: discounted returns minus values", rewards, values, ends, last, 0.9, 1.0
    yield "lam = 0: one-step TD errors", rewards, values, ends, last, 0.9, 0.0


@verdict_of("advantages()")
def check_advantages(advantages) -> bool:
    if advantages is None or not callable(advantages):
        print("Not yet: write advantages(rewards, values, dones, last_values, gamma, lam) and "
              "pass the function.")
        return False
    for what, rewards, values, dones, last, gamma, lam in cases():
        want = reference_advantages(rewards, values, dones, last, gamma, lam)
        try:
            got = advantages(rewards.clone(), values.clone(), dones.clone(), last.clone(),
                             gamma, lam)
        except Exception as err:  # the learner's code may fail in any way; say how
            print(f"Case '{what}': advantages() raised {type(err).__name__}: {err}")
            return False
        if got is None:
            print("Not yet: advantages() returns None; return a tensor [steps, envs, agents].")
            return False
        got = torch.as_tensor(got, dtype=torch.float64)
        if got.shape != want.shape:
            print(f"Case '{what}': got shape {tuple(got.shape)}, want {tuple(want.shape)}.")
            return False
        if torch.allclose(got, want, rtol=1e-4, atol=1e-4):
            continue
        t, e, a = (int(i) for i in ((got - want).abs() > 1e-4).nonzero()[0])
        print(f"Case '{what}': step {t}, env {e}, agent {a}: got {float(got[t, e, a]):.4f}, "
              f"want {float(want[t, e, a]):.4f}.")
        print(f"Hint: {_hint(what)}")
        return False
    print("All right: your advantages match GAE's definition in every case.")
    return True


def _hint(what: str) -> str:
    if "mid-rollout" in what:
        return ("where dones[t] = 1 the episode ended: neither the next value nor the "
                "advantage carried back from step t + 1 may cross it (multiply both by "
                "1 - dones[t]).")
    if "lam = 0" in what:
        return "with lam = 0 nothing is carried back: A_t is delta_t alone."
    return ("go backwards from the last step; after the last step the next value is "
            "last_values, and each A_t = delta_t + gamma * lam * (1 - done_t) * A_{t+1}.")
