"""Data-parallel training on two GPUs (NCCL): each rank's envs on its own GPU, identical
weights on both after training, for every algorithm and kernel backend; and the scaling
efficiency over one GPU, printed (a measurement, not a pass or fail)."""

import importlib.util

import numpy as np
import pytest
import torch

from wd_teach.scale.distributed import format_scaling, scaling_efficiency, spawn_ranks, train_rank
from wd_teach.train.config import load_config

pytestmark = pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason=f"needs 2 GPUs, this machine has {torch.cuda.device_count()} "
           "(gpujobs/multi_gpu.sh runs this on a 2-GPU machine)")

ITERATIONS = 3
SMALL = {
    "cartpole": ["env.num_envs=256", "trainer.steps=32"],  # PPO
    "tag_continuous": ["env.num_envs=16", "env.params.num_taggers=3",  # A2C, two policies
                       "env.params.num_runners=20", "env.params.num_nearest=5",
                       "env.params.episode_length=20", "trainer.steps=20"],
    "pendulum": ["env.num_envs=32", "trainer.steps=8", "algorithm.replay_size=2560",  # DDPG
                 "algorithm.learning_starts=256", "algorithm.batch_size=64",
                 "algorithm.updates_per_iteration=4"],
}


@pytest.mark.parametrize("backend", ["numba", "pycuda"])
@pytest.mark.parametrize("env", list(SMALL))
def test_two_gpus_end_with_identical_weights(env, backend):
    if backend == "pycuda" and importlib.util.find_spec("pycuda") is None:
        pytest.skip("PyCUDA is not installed here")
    config = load_config(env, sets=[f"env.backend={backend}", *SMALL[env]], gpu=True)
    first, second = spawn_ranks(2, train_rank, config.to_dict(), ITERATIONS, None, False,
                                gpu=True)
    assert (first.device, second.device) == ("cuda:0", "cuda:1")  # one GPU per rank
    for name, weights in first.weights.items():
        for key, value in weights.items():
            assert torch.equal(value, second.weights[name][key]), f"{name}.{key}"
    per_rank = config.env.num_envs * config.trainer.steps
    assert first.history[-1]["env_steps"] == 2 * per_rank * ITERATIONS
    losses = [v for k, v in first.history[-1].items() if k.endswith("_loss")]
    assert losses and np.isfinite(losses).all()


@pytest.mark.parametrize("env", ["cartpole", "tag_continuous"])
def test_scaling_efficiency_is_printed(env, tmp_path):
    result = scaling_efficiency(env, gpus=(1, 2), iterations=12, warmup=2,
                                out=tmp_path / "scaling.json")
    print("\n" + format_scaling(result))
    two = result["runs"][1]
    assert two["env_steps"] == 2 * result["runs"][0]["env_steps"]
    assert two["env_steps_per_second"] > 0
