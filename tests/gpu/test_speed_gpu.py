"""CUDA graphs on the GPU: a replayed rollout and update do what the step-by-step loop does,
on both kernel backends, with no host round trip, and re-record when memory moves."""

import gc

import pytest
import torch

from wd_teach.device import BACKENDS
from wd_teach.floors import set_fast
from wd_teach.launch import kernel_stream
from wd_teach.train.speed import Graphed
from wd_teach.train.trainer import Trainer

SMALL_TAG = ["env.num_envs=16", "env.params.num_taggers=3", "env.params.num_runners=20",
             "env.params.num_nearest=5", "env.params.episode_length=20", "trainer.steps=20",
             "policies.taggers.hidden=[64, 64]", "policies.runners.hidden=[64, 64]"]


def tag(backend, *more):
    return Trainer("tag_continuous", gpu=True, sets=[f"env.backend={backend}", *SMALL_TAG,
                                                      *more])


#: Tag's learner as configured (A2C), and PPO with epochs of shuffled minibatches: of
#: samples, or of whole trajectories.
PPO = ["algorithm.name=ppo", "algorithm.epochs=2", "algorithm.num_minibatches=4"]
#: Either with its loss compiled (trainer.compile: Inductor's Triton kernels, recorded and
#: replayed like any others).
ALGORITHMS = {"a2c": [], "ppo": PPO, "ppo-trajectories": [*PPO, "algorithm.shuffle=trajectories"],
              "a2c-compiled": ["trainer.compile=true"],
              "ppo-compiled": [*PPO, "algorithm.shuffle=trajectories", "trainer.compile=true"]}


@pytest.fixture(params=["fast", "plain"])
def floor(request):
    """Both floors (wd_teach.floors): the fast one (the default on a GPU) and the plain one
    that the lessons show; CUDA graphs and precision are the plain floor's own."""
    set_fast(request.param == "fast")
    yield request.param
    set_fast("reset")


def replayed_and_step_by_step(backend, precision, seed=0, algorithm="a2c"):
    sets = [f"trainer.precision={precision}", f"trainer.seed={seed}", *ALGORITHMS[algorithm]]
    graphed, eager = tag(backend, *sets), tag(backend, *sets, "trainer.cuda_graphs=false")
    assert graphed.graphed == {"rollout": True, "update": True}
    assert eager.graphed == {"rollout": False, "update": False}
    return graphed, eager


def weights(trainer):
    return [p.detach() for name in sorted(trainer.policies)
            for p in trainer.policies[name].parameters()]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("algorithm, precision, seed", [
    ("a2c", "fp32", 0), ("a2c", "fp32", 1), ("a2c", "fp32", 2), ("a2c", "tf32", 0),
    ("a2c", "bf16", 0), ("ppo", "fp32", 0), ("ppo", "fp32", 1), ("ppo", "bf16", 0),
    ("ppo-trajectories", "fp32", 0), ("ppo-trajectories", "bf16", 0),
    ("a2c-compiled", "bf16", 0), ("ppo-compiled", "fp32", 0), ("ppo-compiled", "bf16", 0)])
def test_a_replayed_run_is_the_step_by_step_run_bit_for_bit(floor, backend, algorithm, precision,
                                                            seed):
    """A replayed rollout and update launch the very kernels the step-by-step loop launches,
    on the same memory, with the same optimiser arithmetic (capturable Adam in both), so
    every action, reward and weight is the same bit for bit, in every precision: tf32 and
    bf16 round, but they round alike in both runs. PPO's minibatch orders are drawn before
    each update in both. On either floor. bench/replay_check.py repeats it."""
    if floor == "plain" and algorithm.endswith("-compiled"):
        pytest.skip("trainer.compile is the fast floor's option (a no-op on the plain one)")
    graphed, eager = replayed_and_step_by_step(backend, precision, seed, algorithm)
    assert graphed.fast is eager.fast is (floor == "fast")
    for _ in range(5):  # run, record, replay, replay, replay
        graphed.iterate()
        eager.iterate()
        assert torch.equal(graphed.rollout.buffer.actions, eager.rollout.buffer.actions)
        assert torch.equal(graphed.rollout.buffer.rewards, eager.rollout.buffer.rewards)
        for got, want in zip(weights(graphed), weights(eager), strict=True):
            assert torch.equal(got, want)
    assert graphed.rollout._graphed.replays >= 3 and graphed._graphed_update.replays >= 2
    for key in ("taggers/loss", "runners/entropy", "episodes"):
        assert graphed.history[-1][key] == eager.history[-1][key]


@pytest.mark.parametrize("backend", BACKENDS)
def test_replays_never_synchronise(backend):
    trainer = tag(backend)
    trainer.train(3, progress=False)  # run, record, replay
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        trainer.rollout.collect()
        trainer._update_step(trainer.rollout.buffer)
    finally:
        torch.cuda.set_sync_debug_mode("default")


class SynchronisesWhenFreed:
    """Stands for what an old trainer leaves behind (its CUDA graphs, kernel modules): an
    object whose freeing calls the driver in a way a recording stream forbids."""

    def __init__(self, freed: list):
        self.freed, self.cycle = freed, self  # a cycle: only the collector frees it

    def __del__(self):
        torch.cuda.synchronize()
        self.freed.append(torch.cuda.is_current_stream_capturing())


def test_garbage_collected_while_recording_cannot_break_the_recording():
    """With the collector running at nearly every allocation, garbage made while a graph
    records would be freed during the recording and invalidate it (lesson 07 met this:
    five seeds' trainers in a row under PyCUDA). Graphed holds the collector off while it
    records: the replay is right and the garbage is freed after."""
    freed, x = [], torch.ones(1024, device="cuda")

    def fn():
        SynchronisesWhenFreed(freed)  # garbage at once, in a cycle
        return x * 2 + 1

    graphed = Graphed(fn, torch.cuda.Stream())
    threshold = gc.get_threshold()
    gc.set_threshold(1)
    try:
        for _ in range(3):  # run; record and replay; replay
            result = graphed()
        x.fill_(2)
        result = graphed()
    finally:
        gc.set_threshold(*threshold)
    gc.collect()
    torch.testing.assert_close(result, torch.full_like(x, 5))
    assert graphed.replays == 3  # calls 2 (recorded, then replayed), 3 and 4
    assert freed == [False, False]  # the run's and the recording's, neither while recording


def test_moved_weights_are_recorded_again(tmp_path):
    """A checkpoint loaded (new optimiser state) or a policy moved to the CPU and back:
    the recording would read freed memory, so it is made again."""
    trainer = tag("numba")
    trainer.train(3, progress=False)
    path = trainer.save(tmp_path / "run.safetensors")
    straight = tag("numba")
    straight.train(5, progress=False)
    recorded = trainer._graphed_update.graph
    trainer.load(path)
    for policy in trainer.policies.values():
        policy.cpu().cuda()
    trainer.train(2, progress=False)
    assert trainer._graphed_update.graph is not recorded  # recorded again
    for name, policy in straight.policies.items():
        for want, got in zip(policy.parameters(), trainer.policies[name].parameters(),
                             strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_lower_precision_trains(precision):
    trainer = tag("pycuda", f"trainer.precision={precision}")
    before = torch.backends.cuda.matmul.allow_tf32
    rows = trainer.train(4, progress=False)
    assert torch.backends.cuda.matmul.allow_tf32 == before  # restored after each phase
    assert all(torch.isfinite(torch.tensor(r["runners/loss"])) for r in rows)


@pytest.mark.parametrize("env, sets", [
    ("cartpole", ["env.num_envs=32", "trainer.steps=16", "env.backend=pycuda"]),
    ("pendulum", ["env.num_envs=32", "trainer.steps=8", "algorithm.replay_size=2560"]),
])
def test_other_algorithms_run_with_graphs_on(env, sets):
    """PPO replays its rollout (categorical actions) and its update; DDPG's noise comes
    from a torch generator, so its loop stays step by step. Both train."""
    trainer = Trainer(env, gpu=True, sets=sets)
    trainer.train(4, progress=False)
    assert trainer.graphed["update"] is (env == "cartpole")
    assert trainer.graphed["rollout"] is (env == "cartpole")


@pytest.mark.parametrize("backend", BACKENDS)
def test_kernels_launch_on_the_current_stream(backend):
    stream = kernel_stream(backend)
    trainer = tag(backend, "trainer.cuda_graphs=false")
    with torch.cuda.stream(stream):
        trainer.train(2, progress=False)
    torch.cuda.synchronize()
    assert torch.isfinite(trainer.rollout.buffer.values).all()
