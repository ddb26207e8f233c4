"""The two floors (wd_teach.floors) compute the same training: one update on the fast floor
(wd_teach/fast/: fused Linear-ReLU products, stacked heads, the padded input layer, the
compiled loss) equals the plain floor's in fp32, a checkpoint of either loads on the other,
and with the fast floor off nothing of it is imported.

On the CPU the fast pieces would take their plain paths (they pay on a GPU alone), so these
tests turn their GPU paths on: the fused products and stacked heads (`fuses`,
`stacks_heads`), the loss compiled with aot_eager (the graphs Inductor compiles on a GPU,
run with PyTorch's kernels), and in one test the one-pass ReLU backward's Triton kernel in
Triton's interpreter. What stays untested here is the padded-once input of the learners
(FastActorCritic.inputs pads on a GPU only) and the bf16 masked product: tests/gpu/
test_training_gpu.py runs the same comparisons on CUDA.

Tolerance: fp32, 1e-5 relative and 1e-6 absolute, on the losses and on every weight after
the update. The fused products sum in another order than nn.Linear's, so the floors agree
to fp32's rounding, not bit for bit.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from gymnasium import spaces

from wd_teach.fast import learners
from wd_teach.fast import policy as fast_policy
from wd_teach.floors import set_fast
from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.algorithms.base import LearnerOptions
from wd_teach.train.policy import CLASSES, make_policy
from wd_teach.train.rollout import Batch
from wd_teach.train.trainer import Trainer

STEPS, ENVS, AGENTS, FEATURES, HIDDEN = 4, 3, 2, 77, [16, 16]
RTOL, ATOL = 1e-5, 1e-6
SPACES = {"categorical": spaces.MultiDiscrete([3, 3]), "gaussian": spaces.Box(-1, 1, (2,))}
ALGORITHMS = {"a2c": (a2c, {}),
              "ppo": (ppo, {"epochs": 2, "num_minibatches": 2}),
              "ppo-trajectories": (ppo, {"epochs": 2, "num_minibatches": 3,
                                         "shuffle": "trajectories"})}


def batch(space, seed=0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    shape = (STEPS, ENVS, AGENTS)
    if isinstance(space, spaces.Box):
        actions = torch.randn(*shape, 2, generator=g)
    else:
        actions = torch.stack([torch.randint(0, int(n), shape, generator=g)
                               for n in space.nvec], -1)
    return Batch(obs=torch.randn(*shape, FEATURES, generator=g), actions=actions,
                 log_probs=-torch.rand(shape, generator=g), values=torch.randn(shape, generator=g),
                 rewards=torch.randn(shape, generator=g),
                 dones=(torch.rand(shape, generator=g) < 0.2).float(),
                 last_values=torch.randn(ENVS, AGENTS, generator=g))


def learner(algorithm: str, space, fast: bool, shared: bool, activation: str,
            compile: bool = False):
    module, config = ALGORITHMS[algorithm]
    torch.manual_seed(0)
    policy = make_policy("stochastic", FEATURES, space, HIDDEN, shared=shared,
                         activation=activation, classes=fast_policy.CLASSES if fast else CLASSES)
    options = LearnerOptions(lr=1e-2, generator=torch.Generator().manual_seed(1))
    learn = learners.learner_class(module, compile) if fast else module.Learner
    return learn(policy, module.Config(**config), options)


@pytest.fixture
def gpu_paths(monkeypatch):
    """The fast floor's GPU paths on the CPU, and torch.compile's aot_eager backend."""
    monkeypatch.setattr(fast_policy, "fuses", lambda x: True)
    monkeypatch.setattr(fast_policy, "stacks_heads", lambda x: True)
    monkeypatch.setattr(learners, "COMPILE_BACKEND", "aot_eager")
    torch.compiler.reset()
    yield
    torch.compiler.reset()


def assert_same_update(plain, fast, space):
    assert list(plain.policy.state_dict()) == list(fast.policy.state_dict())
    for a, b in zip(plain.policy.parameters(), fast.policy.parameters(), strict=True):
        assert torch.equal(a, b)  # the same start: the same draws on both floors
    want, got = plain.update(batch(space)), fast.update(batch(space))
    assert want.keys() == got.keys()
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=RTOL, atol=ATOL)
    for a, b in zip(fast.policy.parameters(), plain.policy.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("compile", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("shared", [False, True], ids=["separate", "shared"])
@pytest.mark.parametrize("space", SPACES.values(), ids=SPACES.keys())
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_one_update_on_the_fast_floor_is_the_plain_floors(gpu_paths, algorithm, space, shared,
                                                          activation, compile):
    plain = learner(algorithm, space, False, shared, activation)
    fast = learner(algorithm, space, True, shared, activation, compile)
    calls, product = [], torch._addmm_activation
    torch._addmm_activation = lambda *a, **k: calls.append(1) or product(*a, **k)
    try:
        assert_same_update(plain, fast, space)
    finally:
        torch._addmm_activation = product
    assert bool(calls) is (activation == "relu")  # the fused products really ran


@pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                    reason="Triton is not installed here (pip install -e '.[dev]'); "
                           "tests/gpu/test_floors_gpu.py runs the kernel on a GPU")
def test_the_fast_floors_update_with_tritons_kernel_is_the_plain_floors():
    """As above, with the one-pass ReLU backward's Triton kernel (which an fp32 update on a
    GPU runs) in Triton's interpreter, for every algorithm, action space and body."""
    script = textwrap.dedent("""
        import os
        os.environ["TRITON_INTERPRET"] = "1"
        import torch
        from wd_teach.fast import policy, triton_kernels
        import test_floors_equal as t
        policy.fuses = policy.stacks_heads = lambda x: True
        triton_kernels._fusable = lambda g, o: triton_kernels.kernel_takes(g, o)
        ran, kernel = [], triton_kernels._triton_relu_backward
        triton_kernels._triton_relu_backward = lambda *a: ran.append(1) or kernel(*a)
        cases = 0
        for algorithm in t.ALGORITHMS:
            for space in t.SPACES.values():
                for shared in (False, True):
                    plain = t.learner(algorithm, space, False, shared, "relu")
                    fast = t.learner(algorithm, space, True, shared, "relu")
                    t.assert_same_update(plain, fast, space)
                    cases += 1
        assert ran, "the Triton kernel did not run"
        print("checked", cases, "kernel calls", len(ran))
    """)
    # the tests' folder first, and whatever the path held (a GPU kit's packages live there)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(__file__), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked 12" in done.stdout


@pytest.mark.parametrize("first, then", [(True, False), (False, True)])
def test_a_checkpoint_of_one_floor_loads_on_the_other(tmp_path, first, then):
    """The same parameter names on both floors (Layers is an nn.Sequential, AlignedInput an
    nn.Linear): a run saved on one floor goes on on the other with the same weights."""
    sets = ["env.num_envs=4", "trainer.steps=8", "algorithm.num_minibatches=2",
            "policies.cart.shared=true", "policies.cart.activation=relu"]
    try:
        set_fast(first)
        trainer = Trainer("cartpole", gpu=False, sets=sets)
        trainer.train(2, progress=False)
        path = trainer.save(tmp_path / "run.safetensors")
        set_fast(then)
        again = Trainer.from_checkpoint(path, gpu=False)
        assert (trainer.fast, again.fast) == (first, then)
        for want, got in zip(trainer.policies["cart"].parameters(),
                             again.policies["cart"].parameters(), strict=True):
            assert torch.equal(want, got)
        again.train(1, progress=False)
    finally:
        set_fast("reset")


def test_with_the_fast_floor_off_nothing_of_it_is_imported():
    """WD_TEACH_FAST=0: A2C and PPO train on the CPU, and no module of wd_teach.fast (nor
    the old wd_teach.train.fused, which re-exports from it) was imported."""
    script = textwrap.dedent("""
        import sys
        from wd_teach.train.trainer import Trainer
        for name in ("a2c", "ppo"):
            trainer = Trainer("cartpole", gpu=False,
                              sets=["env.num_envs=4", "trainer.steps=8", "trainer.compile=true",
                                    f"algorithm.name={name}", "algorithm.num_minibatches=2"]
                                   if name == "ppo" else
                              ["env.num_envs=4", "trainer.steps=8", f"algorithm.name={name}"])
            trainer.train(2, progress=False)
        loaded = [m for m in sys.modules if m.startswith(("wd_teach.fast", "wd_teach.train.fused"))]
        print("fast modules:", loaded)
    """)
    env = {**os.environ, "WD_TEACH_FAST": "0"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fast modules: []" in done.stdout
