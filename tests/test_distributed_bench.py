"""bench/scaling_gpus.py, the one-and-two-GPU benchmark, at tiny size on the CPU (gloo):
the plain Trainer's ranks under torchrun and the Lightning module's under Lightning's own
DDP strategy end with identical weights on both ranks, with different seeds, the env steps
summed, and the same weights as each other; a machine with fewer than 2 GPUs is told so
plainly, and the 2-GPU rows are not run there."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "scaling_gpus.py"
ENVS, STEPS, ITERATIONS, WARMUP = 4, 4, 2, 1  # the script's CPU sizes
MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
             "NVSHMEM_DISABLE_NVLS": "1"}


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("scaling_gpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(*arguments, timeout=400, gpus=True):
    """The script in a fresh process; `gpus=False` hides this machine's GPUs from it."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if not gpus:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return subprocess.run([sys.executable, str(SCRIPT), *arguments], env=env, text=True,
                          capture_output=True, timeout=timeout)


@pytest.mark.slow
def test_the_tiny_cpu_run_trains_alike_on_one_and_two_ranks(tmp_path):
    out = tmp_path / "scaling.json"
    done = run_script("--device", "cpu", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    rows = {(row["trainer"], row["gpus"]): row for row in result["rows"]}
    assert sorted(rows) == [("lightning", 1), ("lightning", 2), ("plain", 1), ("plain", 2)]
    for (trainer, gpus), row in rows.items():
        ranks = row["ranks"]
        assert [r["rank"] for r in ranks] == list(range(gpus)), trainer
        assert [r["seed"] for r in ranks] == list(range(gpus))  # trainer.seed + rank
        assert len({r["checksum"] for r in ranks}) == 1 and row["weights_identical"]
        # the history's env steps: every rank's, summed by the averaging of each row
        assert {r["env_steps"] for r in ranks} == {gpus * ENVS * STEPS * (WARMUP + ITERATIONS)}
        assert row["env_steps_per_second"] == pytest.approx(
            sum(r["env_steps_per_second"] for r in ranks))
    for gpus in (1, 2):  # Lightning's DDP trains exactly as the plain ranks do
        assert rows["plain", gpus]["ranks"][0]["checksum"] == \
            rows["lightning", gpus]["ranks"][0]["checksum"]
    assert rows["plain", 1]["ranks"][0]["checksum"] != rows["plain", 2]["ranks"][0]["checksum"]
    two = rows["plain", 2]
    assert two["speedup"] == pytest.approx(two["env_steps_per_second"]
                                           / rows["plain", 1]["env_steps_per_second"])
    assert two["efficiency"] == pytest.approx(two["speedup"] / 2)
    assert result["environment"] == MULTICAST and result["not_run"] is None
    assert "speed-up" in done.stdout and "same weights" in done.stdout


def test_without_a_gpu_it_says_so_and_measures_nothing(tmp_path):
    done = run_script("--out", str(tmp_path / "x.json"), timeout=120, gpus=False)
    assert done.returncode == 2
    assert "no GPU here" in done.stderr and "--device cpu" in done.stderr
    assert not (tmp_path / "x.json").exists()


def test_one_gpu_runs_only_the_one_gpu_rows_and_says_so(bench, monkeypatch, capsys, tmp_path):
    """On a one-GPU machine: the 1-GPU rows run (here each worker is replaced by a row
    that records what was asked), a plain line says the 2-GPU rows were not run, the JSON
    says it too, and the exit status is 3."""
    asked = []

    def measured(trainer, gpus, envs, args):
        asked.append((trainer, gpus, envs))
        return {"trainer": trainer, "gpus": gpus, "envs_per_gpu": envs,
                "env_steps_per_second": 1.0, "weights_identical": True, "ranks": []}

    for key in MULTICAST:
        monkeypatch.setenv(key, "7")  # whatever the shell had
    monkeypatch.setattr(bench.torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(bench, "device_name", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(bench, "measure", measured)
    out = tmp_path / "one.json"
    assert bench.main(["--out", str(out)]) == 3
    assert asked == [(t, 1, e) for e in (500, 10_000) for t in ("plain", "lightning")]
    printed = capsys.readouterr().out
    assert "this machine has 1 GPU: the 2-GPU rows were NOT run" in printed
    assert "the 2-GPU rows were NOT run" in json.loads(out.read_text())["not_run"]
    for key, value in MULTICAST.items():
        assert os.environ[key] == value  # for every worker


def test_the_results_file_is_named_after_the_gpu(bench):
    assert bench.default_out("NVIDIA H200").name == "scaling_gpus_h200.json"
    assert bench.default_out("NVIDIA H100 80GB HBM3").name == "scaling_gpus_h100.json"


@pytest.mark.parametrize("arguments, message", [
    (["--trainers", "plain,jax"], "--trainers takes plain and/or lightning"),
    (["--envs", "500,lots"], "takes whole numbers"),
    (["--envs", "0"], "--envs takes positive numbers"),
    (["--warmup", "0"], "--iterations and --warmup take at least 1"),
])
def test_bad_arguments_are_refused(bench, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_:
        bench.parse(arguments)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
