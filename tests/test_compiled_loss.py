"""trainer.compile, a fast floor's option (wd_teach/fast/learners.py): A2C's and PPO's losses,
from the output layers to the number, as one function of tensors that torch.compile traces
whole (no graph breaks). Here on the CPU
with the aot_eager backend, which traces the very graphs Inductor compiles on a GPU and
runs them forward and backward with PyTorch's kernels: the same losses and gradients as
the plain loss. tests/gpu/test_speed_gpu.py runs Inductor's kernels on a GPU, replayed
and step by step."""

import pytest
import torch
from gymnasium import spaces

from wd_teach.errors import ConfigError, MissingPieceError
from wd_teach.fast import learners
from wd_teach.fast import policy as fast_policy
from wd_teach.fast import triton_kernels as fused
from wd_teach.floors import set_fast
from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.algorithms.base import LearnerOptions
from wd_teach.train.policy import make_policy
from wd_teach.train.rollout import Batch
from wd_teach.train.trainer import Trainer

STEPS, ENVS, AGENTS, FEATURES = 4, 3, 2, 6
SPACES = {"equal heads": spaces.MultiDiscrete([3, 3]),
          "unequal heads": spaces.MultiDiscrete([4, 2]), "one head": spaces.Discrete(5),
          "continuous": spaces.Box(-1, 1, (2,))}


def batch(space, seed=0, steps=STEPS) -> Batch:
    g = torch.Generator().manual_seed(seed)
    shape = (steps, ENVS, AGENTS)
    if isinstance(space, spaces.Box):
        actions = torch.randn(*shape, 2, generator=g, dtype=torch.float64)
    else:
        counts = [space.n] if isinstance(space, spaces.Discrete) else list(space.nvec)
        actions = torch.stack([torch.randint(0, int(n), shape, generator=g) for n in counts], -1)
    return Batch(obs=torch.randn(*shape, FEATURES, generator=g, dtype=torch.float64),
                 actions=actions, log_probs=-torch.rand(shape, generator=g, dtype=torch.float64),
                 values=torch.randn(shape, generator=g, dtype=torch.float64),
                 rewards=torch.randn(shape, generator=g, dtype=torch.float64),
                 dones=(torch.rand(shape, generator=g) < 0.2).double(),
                 last_values=torch.randn(ENVS, AGENTS, generator=g, dtype=torch.float64))


def learner(module, space, compile: bool, shared: bool, **config):
    torch.manual_seed(0)
    policy = make_policy("stochastic", FEATURES, space, [8], shared=shared,
                         classes=fast_policy.CLASSES).double()
    options = LearnerOptions(lr=1e-2, generator=torch.Generator().manual_seed(1))
    return learners.learner_class(module, compile)(policy, module.Config(**config), options)


@pytest.fixture
def traced(monkeypatch):
    """Compile with aot_eager, from a clean slate (no graphs of other tests)."""
    monkeypatch.setattr(learners, "COMPILE_BACKEND", "aot_eager")
    torch.compiler.reset()
    yield
    torch.compiler.reset()


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("space", SPACES.values(), ids=SPACES.keys())
@pytest.mark.parametrize("module, config", [
    (a2c, {}), (a2c, {"normalize_advantages": True}),
    (ppo, {"epochs": 2, "num_minibatches": 2}),
    (ppo, {"epochs": 1, "num_minibatches": 3, "clip_value": True,
           "shuffle": "trajectories"})], ids=["a2c", "a2c-normalized", "ppo", "ppo-traj"])
def test_a_compiled_loss_takes_the_plain_losss_steps(traced, module, config, space, shared):
    """Whole updates, compiled and plain, from the same start: the same losses and the
    same weights after, every head layout and both bodies."""
    plain = learner(module, space, False, shared, **config)
    compiled = learner(module, space, True, shared, **config)
    assert compiled.compile and not plain.compile
    for seed in range(2):
        want, got = plain.update(batch(space, seed)), compiled.update(batch(space, seed))
        assert want.keys() == got.keys()
        for key in want:
            torch.testing.assert_close(got[key], want[key], rtol=1e-10, atol=1e-12)
        for a, b in zip(compiled.policy.parameters(), plain.policy.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_the_compiled_loss_is_traced_once_per_size_not_per_learner(traced):
    """Learners of the same layout and batch size share one traced graph: guards are on
    the sizes and settings, not on the learner, so a process that builds many trainers
    (a benchmark, a test run) compiles each size once and every group of that size runs
    the same kernels. A2C's batch size reaches its loss as a tensor, not as a number fixed
    into the graph."""
    from torch._dynamo.utils import counters

    space = SPACES["equal heads"]
    for module in (ppo, a2c):
        counters.clear()
        for _ in range(3):
            for size in (2, 3, 6):  # PPO: minibatches a rollout; A2C: steps a rollout
                if module is ppo:
                    made = learner(ppo, space, True, True, epochs=1, num_minibatches=size)
                    made.update(batch(space))
                else:
                    learner(a2c, space, True, True).update(batch(space, steps=size))
        assert counters["stats"]["unique_graphs"] == 3, module.__name__


def test_compile_is_for_losses_that_can_be_compiled():
    with pytest.raises(ConfigError, match="algorithm 'ddpg' has no loss to compile"):
        Trainer("pendulum", gpu=False, sets=["algorithm.name=ddpg", "trainer.compile=true"])


@pytest.mark.parametrize("fast", [True, False])
def test_on_the_cpu_compile_is_off_as_cuda_graphs_are(fast):
    """On the CPU compile does nothing on either floor. On the plain floor it does nothing
    on a GPU either (a documented no-op: trainer.compile is a fast floor's option, and the
    plain learners have no compiled loss), so a config that asks for it still trains."""
    set_fast(fast)
    try:
        trainer = Trainer("cartpole", gpu=False, sets=["trainer.compile=true",
                                                       "env.num_envs=4", "trainer.steps=8"])
    finally:
        set_fast("reset")
    assert trainer.fast is fast
    assert not any(getattr(lr, "compile", False) for lr in trainer.learners.values())
    assert isinstance(trainer.learners["cart"], learners.PPOLearner) is fast
    trainer.iterate()


def test_without_triton_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setattr(fused.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingPieceError, match=r"trainer.compile needs Triton.*pip install "
                                                r"triton.*trainer.compile=false"):
        fused.require_triton("trainer.compile")


def test_the_door_names_the_algorithms_the_fast_floor_compiles():
    """wd_teach.floors.COMPILED_LOSSES, read by the config check without importing the fast
    floor, names exactly the algorithms with a fast twin that compiles its loss."""
    from wd_teach.floors import COMPILED_LOSSES

    twins = {module.__name__.rsplit(".", 1)[1] for module in learners.LEARNERS}
    assert set(COMPILED_LOSSES) == twins
    for module in learners.LEARNERS:
        assert learners.learner_class(module, compile=True).keywords == {"compile": True}
