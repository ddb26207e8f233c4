"""Data-parallel training on two GPUs (NCCL): each rank's envs on its own GPU, identical
weights on both after training, for every algorithm and kernel backend, started by
spawn_ranks (--gpus 2), by torchrun, and by Lightning's DDP (through bench/scaling_gpus.py);
and the scaling efficiency over one GPU, printed (a measurement, not a pass or fail).
NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and its kin) for every process started here."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from wd_teach.scale.distributed import format_scaling, scaling_efficiency, spawn_ranks, train_rank
from wd_teach.train.config import load_config

pytestmark = pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason=f"needs 2 GPUs, this machine has {torch.cuda.device_count()} "
           "(run this file on a machine with 2 GPUs)")

ITERATIONS = 3
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True, scope="module")
def multicast_off():
    with pytest.MonkeyPatch.context() as patch:
        for key, value in MULTICAST_OFF.items():
            patch.setenv(key, value)
        yield
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


def test_torchrun_puts_each_rank_on_its_own_gpu(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "2", "-m", "wd_teach", "train", "cartpole", "--envs", "256",
               "--set", "trainer.steps=32", "--iterations", str(ITERATIONS), "--quiet",
               "--out", str(tmp_path / "run")]
    done = subprocess.run(command, text=True, capture_output=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = re.findall(r"^rank (\d) of 2: seed (\d+), envs on (\S+), weights (\w+)$",
                       done.stdout, re.MULTILINE)
    by_rank = {int(r): (int(seed), device, checksum) for r, seed, device, checksum in ranks}
    assert (by_rank[0][1], by_rank[1][1]) == ("cuda:0", "cuda:1")  # one GPU per rank
    assert by_rank[1][0] == by_rank[0][0] + 1
    assert by_rank[0][2] == by_rank[1][2], "the ranks' weights differ"
    assert (tmp_path / "run" / "checkpoint.safetensors").is_file()


def test_the_scaling_bench_runs_both_trainers_on_two_gpus(tmp_path):
    """bench/scaling_gpus.py at a small size: plain (torchrun) and Lightning (its DDP
    strategy) on 1 and 2 GPUs; every rank on its own GPU, the ranks' weights identical."""
    out = tmp_path / "scaling.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "scaling_gpus.py"), "--envs",
                           "16", "--iterations", "2", "--warmup", "1", "--out", str(out)],
                          text=True, capture_output=True, timeout=900, cwd=ROOT)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 4
    for row in rows:
        assert row["weights_identical"], row
        assert [r["device"] for r in row["ranks"]] == [f"cuda:{i}" for i in range(row["gpus"])]
