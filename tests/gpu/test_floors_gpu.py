"""The two floors on a GPU: one fp32 update on the fast floor (the padded input layer and
observations, fused Linear-ReLU products with Triton's one-pass ReLU backward, stacked
heads, the loss compiled by Inductor) equals the plain floor's, for A2C and PPO (both
shuffles), categorical and gaussian actions, shared and separate bodies. The CPU twin is
tests/test_floors_equal.py.

Tolerance: 1e-4 relative and absolute, on the losses and every weight after the update:
cuBLAS picks other kernels for the fused and padded products than for nn.Linear's, which
sum in other orders, and Adam's first step divides each gradient by its own size (plus
eps 1e-5), so a difference in the eighth digit of a tiny gradient can show in the fifth.
"""

import pytest
import torch
from gymnasium import spaces

from wd_teach.fast import learners, triton_kernels
from wd_teach.fast import policy as fast_policy
from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.algorithms.base import LearnerOptions
from wd_teach.train.policy import CLASSES, make_policy
from wd_teach.train.rollout import Batch

STEPS, ENVS, AGENTS, FEATURES, HIDDEN = 8, 16, 4, 77, [64, 64]
TOL = 1e-4
SPACES = {"categorical": spaces.MultiDiscrete([6, 6]), "gaussian": spaces.Box(-1, 1, (2,))}
ALGORITHMS = {"a2c": (a2c, {}),
              "ppo": (ppo, {"epochs": 2, "num_minibatches": 4}),
              "ppo-trajectories": (ppo, {"epochs": 2, "num_minibatches": 4,
                                         "shuffle": "trajectories"})}


def batch(space) -> Batch:
    g = torch.Generator("cuda").manual_seed(0)
    shape = (STEPS, ENVS, AGENTS)
    if isinstance(space, spaces.Box):
        actions = torch.randn(*shape, 2, generator=g, device="cuda")
    else:
        actions = torch.stack([torch.randint(0, int(n), shape, generator=g, device="cuda")
                               for n in space.nvec], -1)
    rand = lambda: torch.rand(shape, generator=g, device="cuda")  # noqa: E731
    return Batch(obs=torch.randn(*shape, FEATURES, generator=g, device="cuda"),
                 actions=actions, log_probs=-rand(), values=rand() - 0.5, rewards=rand() - 0.5,
                 dones=(rand() < 0.2).float(),
                 last_values=torch.randn(ENVS, AGENTS, generator=g, device="cuda"))


def learner(algorithm, space, fast, shared, compile=False):
    module, config = ALGORITHMS[algorithm]
    torch.manual_seed(0)
    policy = make_policy("stochastic", FEATURES, space, HIDDEN, shared=shared,
                         activation="relu",
                         classes=fast_policy.CLASSES if fast else CLASSES).cuda()
    options = LearnerOptions(lr=1e-2, generator=torch.Generator("cuda").manual_seed(1),
                             capturable=True)
    learn = learners.learner_class(module, compile) if fast else module.Learner
    return learn(policy, module.Config(**config), options)


@pytest.mark.parametrize("shared", [False, True], ids=["separate", "shared"])
@pytest.mark.parametrize("space", SPACES.values(), ids=SPACES.keys())
@pytest.mark.parametrize("algorithm, compile", [
    ("a2c", False), ("ppo", False), ("ppo-trajectories", False), ("a2c", True),
    ("ppo-trajectories", True)])
def test_one_update_on_the_fast_floor_is_the_plain_floors_on_the_gpu(monkeypatch, algorithm,
                                                                     compile, space, shared):
    torch.compiler.reset()
    plain = learner(algorithm, space, False, shared)
    fast = learner(algorithm, space, True, shared, compile)
    ran, kernel = [], triton_kernels._triton_relu_backward
    monkeypatch.setattr(triton_kernels, "_triton_relu_backward",
                        lambda *a: ran.append(1) or kernel(*a))
    tf32, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, False
    try:  # fp32 products on both floors
        want, got = plain.update(batch(space)), fast.update(batch(space))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    assert ran  # the fast floor's Triton kernel really ran
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=TOL, atol=TOL)
    for a, b in zip(fast.policy.parameters(), plain.policy.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=TOL, atol=TOL)
