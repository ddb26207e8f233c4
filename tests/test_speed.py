"""What makes training fast, checked on the CPU: the update in parts gives the gradient of
the whole batch, and the speed settings are checked at the door. (CUDA graphs need a GPU:
tests/gpu/test_speed_gpu.py replays them against the step-by-step loop.)"""

import pytest
import torch

from wd_teach.errors import ConfigError
from wd_teach.train.speed import precision_context
from wd_teach.train.trainer import Trainer

TAG = ["env.num_envs=3", "trainer.steps=6", "env.params.num_taggers=2",
       "env.params.num_runners=4", "env.params.num_nearest=2"]


def test_an_update_in_parts_reports_the_losses_of_the_whole_batch():
    whole = Trainer("tag_continuous", gpu=False, sets=TAG)
    parts = Trainer("tag_continuous", gpu=False, sets=[*TAG, "trainer.chunk_samples=7"])
    # 6 steps x 3 envs x 4 runners: a step a part
    assert parts.learners["runners"].options.chunk_samples == 7
    for trainer in (whole, parts):
        trainer.train(1, progress=False)
    torch.testing.assert_close(parts.rollout.buffer.obs, whole.rollout.buffer.obs)
    for key in ("runners/loss", "runners/value_loss", "taggers/entropy"):
        assert parts.history[-1][key] == pytest.approx(whole.history[-1][key], rel=1e-5)


def test_the_parts_add_up_to_the_gradient_of_the_whole_batch():
    """The gradients themselves (Adam's step hardly depends on their scale, so the weights
    alone would not show a part weighted wrongly): 6 steps as one part, and a step a part."""
    grads = []
    for chunk in (1000, 7):
        trainer = Trainer("tag_continuous", gpu=False, sets=[
            *TAG, f"trainer.chunk_samples={chunk}", "algorithm.max_grad_norm=0"])
        trainer.rollout.collect()
        learner = trainer.learners["runners"]
        learner.optimizer.step = lambda: None  # keep the gradients, leave the weights
        learner.update(trainer.rollout.buffer.group(trainer.groups[1]))
        grads.append([p.grad.clone() for p in learner.policy.parameters()])
    for whole, parts in zip(*grads, strict=True):
        assert whole.abs().max() > 0
        torch.testing.assert_close(parts, whole, rtol=1e-4, atol=1e-7)


def test_speed_settings_are_checked():
    with pytest.raises(ConfigError, match="trainer.precision must be one of fp32, tf32, bf16"):
        Trainer("cartpole", gpu=False, sets=["trainer.precision=fp16"])
    with pytest.raises(ConfigError, match=r"trainer.chunk_samples must be a whole number in \[1, "):
        Trainer("cartpole", gpu=False, sets=["trainer.chunk_samples=0"])
    with pytest.raises(ConfigError, match="trainer.cuda_graphs must be true or false"):
        Trainer("cartpole", gpu=False, sets=["trainer.cuda_graphs=sometimes"])


def test_on_the_cpu_nothing_is_graphed_and_precision_is_fp32():
    trainer = Trainer("tag_continuous", gpu=False, sets=[*TAG, "trainer.precision=tf32"])
    assert trainer.graphed == {"rollout": False, "update": False}
    trainer.train(1, progress=False)
    before = torch.backends.cuda.matmul.allow_tf32
    with precision_context("tf32", torch.device("cpu")):
        assert torch.backends.cuda.matmul.allow_tf32 == before
    with pytest.raises(ValueError, match="precision must be one of"):
        with precision_context("fp8", torch.device("cpu")):
            pass


def test_episode_sums_of_a_whole_rollout_equal_the_step_by_step_sums():
    """EpisodeStats.add_rollout (a few vectorised operations) against update() called once
    per step, over rollouts that carry unfinished episodes from one into the next."""
    from wd_teach.train.metrics import EpisodeStats

    gen = torch.Generator().manual_seed(3)
    stepwise, at_once = (EpisodeStats(5, 3, torch.device("cpu"), metrics=("caught",))
                         for _ in range(2))
    for _ in range(3):
        rewards = torch.randn(9, 5, 3, generator=gen)
        dones = torch.rand(9, 5, generator=gen) < 0.25
        tags = torch.randint(0, 4, (9, 5), generator=gen)
        for t in range(9):
            stepwise.update(rewards[t], dones[t], {"caught": tags[t]})
        at_once.add_rollout(rewards, dones.float(), {"caught": tags})
        assert at_once.episodes.item() == stepwise.episodes.item() > 0
        for name in ("return_sum", "reward_sum", "length_sum", "running_return",
                     "running_length"):
            torch.testing.assert_close(getattr(at_once, name), getattr(stepwise, name),
                                       msg=name)
        torch.testing.assert_close(at_once.metric_sums["caught"], stepwise.metric_sums["caught"])
        assert at_once.metric_sums["caught"] > 0
        assert at_once.steps == stepwise.steps


def test_no_collection_holds_the_collector_off_and_restores_it_after():
    """no_collection, inside which Graphed records (wd_teach/train/speed.py; the GPU twin in
    tests/gpu/test_speed_gpu.py records through Graphed itself): dead objects are collected
    first, none inside, and the collector is as it was after."""
    import gc

    from wd_teach.train.speed import no_collection

    class Cycle:
        def __init__(self):
            self.me = self

    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            Cycle()
            with no_collection():
                assert not gc.isenabled()
                assert not [o for o in gc.get_objects() if isinstance(o, Cycle)]  # collected
                Cycle()
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
