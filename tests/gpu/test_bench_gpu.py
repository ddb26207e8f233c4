"""The throughput bench and the auto-scaler on the GPU, at small sizes, on both kernel
backends: every row runs on the device, the CPU baseline gives a ratio, the JSON names the
GPU and its driver, and an auto-scaled size was run within its budget."""

import pytest
import torch

from wd_teach.cli import main as cli
from wd_teach.device import BACKENDS
from wd_teach.scale.autoscale import fit_num_envs
from wd_teach.scale.bench import format_table, run_bench

SMALL = ["env.params.episode_length=20", "trainer.steps=20",
         "policies.taggers.hidden=[64, 64]", "policies.runners.hidden=[64, 64]"]


def test_env_rows_on_both_backends_name_the_gpu():
    found = run_bench("env", envs=[10, 100], agents=[110], backends=BACKENDS, iterations=5)
    assert [(r["backend"], r["num_envs"]) for r in found["rows"]] == [
        ("pycuda", 10), ("pycuda", 100), ("numba", 10), ("numba", 100)]
    for row in found["rows"]:
        assert row["device"] == "cuda" and row["note"] == "" and row["error"] == ""
        assert row["env_steps_per_second"] > 0
    device = found["device"]
    assert device["kind"] == "cuda" and device["name"] == torch.cuda.get_device_name()
    assert device["driver"] and device["driver_cuda"] and device["multiprocessors"] > 0
    assert found["versions"]["pycuda"] and found["versions"]["numba_cuda"]


def test_sampler_rows_on_both_backends_and_torch():
    found = run_bench("sampler", envs=[100], agents=[110], backends=BACKENDS, iterations=5)
    assert [r["backend"] for r in found["rows"]] == [*BACKENDS, "torch.multinomial"]
    assert all(r["device"] == "cuda" and r["seconds"] > 0 for r in found["rows"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_and_rollout_with_the_cpu_baseline_in_one_run(backend):
    found = run_bench(["rollout", "train"], envs=[16], backends=[backend], iterations=3,
                      cpu_baseline=True, cpu_iterations=1, sets=SMALL)
    rows = {(r["what"], r["backend"]): r for r in found["rows"]}
    for what in ("rollout", "train"):
        gpu, cpu = rows[what, backend], rows[what, "numpy"]
        assert gpu["device"] == "cuda" and gpu["peak_memory_bytes"] > 0
        assert cpu["device"] == "cpu" and cpu["baseline"]
    assert set(rows["train", backend]["breakdown"]) >= {"policy", "sampling", "env step",
                                                       "training"}
    assert {(r["what"], r["backend"]) for r in found["ratios"]} == {("rollout", backend),
                                                                   ("train", backend)}
    assert "cuda (baseline)" not in format_table(found)


def test_cli_writes_the_json(tmp_path):
    out = tmp_path / "bench.json"
    assert cli(["bench", "env", "--envs", "10", "--agents", "110", "--iterations", "3",
                "--out", str(out), "--quiet"]) == 0
    assert out.is_file()


def test_auto_scaling_runs_the_size_it_returns_within_the_budget():
    fit = fit_num_envs("tag_continuous", sets=SMALL, max_envs=256)
    assert 32 <= fit.num_envs <= 256
    peaks = dict(fit.measured)
    assert peaks[fit.num_envs] is not None and peaks[fit.num_envs] <= fit.budget_bytes
    assert fit.bytes_per_env > 0 and fit.batch_size == 20 * fit.num_envs * 110
