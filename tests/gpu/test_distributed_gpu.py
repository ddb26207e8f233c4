"""Data-parallel training on two GPUs (NCCL): each rank's envs on its own GPU, identical
weights on both after 20 iterations, for every algorithm and kernel backend, started by
spawn_ranks (--gpus 2), by torchrun, and by Lightning's DDP (through bench/scaling_gpus.py);
the averaged gradient of a Tag policy equal to one process's gradient over both ranks'
batches; and the scaling efficiency over one GPU, printed (a measurement, not a pass or
fail).
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
from gymnasium import spaces

from wd_teach.scale.distributed import (
    average_gradients,
    format_scaling,
    scaling_efficiency,
    spawn_ranks,
    train_rank,
)
from wd_teach.train.algorithms.common import gradient_step
from wd_teach.train.config import load_config
from wd_teach.train.policy import make_policy

pytestmark = pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason=f"needs 2 GPUs, this machine has {torch.cuda.device_count()} "
           "(run this file on a machine with 2 GPUs)")

ITERATIONS = 20
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


BATCH = 4096  # agent steps per rank


def batch_of(rank: int, device: torch.device) -> dict[str, torch.Tensor]:
    """Rank `rank`'s batch of Tag-sized samples (77 features, 12 actions), the same on any
    process that asks for it: observations, actions taken, advantages and returns."""
    gen = torch.Generator(device).manual_seed(1000 + rank)
    return {"obs": torch.randn(BATCH, 77, device=device, generator=gen),
            "actions": torch.randint(0, 12, (BATCH, 1), device=device, generator=gen),
            "advantages": torch.randn(BATCH, device=device, generator=gen),
            "returns": torch.randn(BATCH, device=device, generator=gen)}


def a2c_loss(policy, batch):
    """The A2C loss (policy gradient, value error, entropy bonus), a mean over the batch."""
    log_prob, entropy, value = policy.evaluate(batch["obs"], batch["actions"])
    return (-(log_prob * batch["advantages"]).mean()
            + 0.5 * (value - batch["returns"]).square().mean() - 0.01 * entropy.mean())


def gradients_on_two_gpus(rank, world_size):
    """On this rank's GPU: a Tag policy ([256, 256], the same start on every rank) takes one
    gradient step on its own batch through gradient_step with the averaging hook; the
    rank's own gradient (before the all-reduce), the one it stepped with (after it), and
    the gradient one process gets from the loss over both ranks' batches together."""
    device = (torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available()
              else torch.device("cpu"))  # the CPU: to try the test's own logic
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 products, so rounding is fp32's
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    policy = make_policy("stochastic", 77, spaces.Discrete(12), [256, 256]).to(device)
    start = {k: v.clone() for k, v in policy.state_dict().items()}
    own, stepped = [], []

    def reduce(parameters):
        own.extend(p.grad.detach().cpu().clone() for p in parameters)
        average_gradients(parameters)
        stepped.extend(p.grad.detach().cpu().clone() for p in parameters)

    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    gradient_step(optimizer, a2c_loss(policy, batch_of(rank, device)), policy.parameters(),
                  None, reduce=reduce)
    policy.load_state_dict(start)  # one process, both batches, from the same start
    policy.zero_grad(set_to_none=True)
    both = [batch_of(r, device) for r in range(world_size)]
    a2c_loss(policy, {k: torch.cat([b[k] for b in both]) for k in both[0]}).backward()
    whole = [p.grad.detach().cpu().clone() for p in policy.parameters()]
    return str(device), own, stepped, whole


def test_the_averaged_gradient_is_one_process_gradient_over_both_batches():
    (dev0, own0, stepped0, whole0), (dev1, _, stepped1, whole1) = spawn_ranks(
        2, gradients_on_two_gpus, gpu=True)
    assert (dev0, dev1) == ("cuda:0", "cuda:1")
    assert len(stepped0) == len(whole0) == 12  # 2 networks x 3 layers x (weight, bias)
    for a, b in zip(stepped0, stepped1, strict=True):
        assert torch.equal(a, b)  # both ranks stepped with the very same bits
    for averaged, whole in zip(stepped0, whole0, strict=True):
        # The mean of two means of 4,096 samples is the mean of all 8,192, up to the
        # order of fp32 sums: agreement to ~1e-6 relative, not bit for bit.
        torch.testing.assert_close(averaged, whole, rtol=1e-4, atol=1e-6)
    for a, b in zip(whole0, whole1, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)  # two GPUs, one answer
    # The comparison can fail: a rank's own gradient is far from the whole batch's.
    apart = max(((o - w).abs().max() / w.abs().max()).item()
                for o, w in zip(own0, whole0, strict=True))
    assert apart > 1e-2, "the ranks' batches gave the same gradient: nothing to average"


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
