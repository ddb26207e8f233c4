"""Data-parallel training started the way PyTorch starts it, on the CPU (gloo): torchrun runs
`python -m wd_teach train` once per rank, on one "node" and on two (two torchrun launches on
this machine, as two machines would run them). The ranks end with the same weights, those
of rank 0's checkpoint and of the same training started by `spawn_ranks` (--gpus); their
seeds differ; the env steps add up; only rank 0 writes. Leaving the process group frees it,
so that no gloo thread outlives it into the interpreter's exit. Bad launches are refused
before any process waits for another."""

import json
import os
import re
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from wd_teach.cli import main
from wd_teach.errors import MissingPieceError, TrainError
from wd_teach.scale.distributed import (
    Place,
    check_local_gpus,
    free_port,
    launched_place,
    policy_weights,
    process_group,
    rank_trainer,
    rank_zero_decides,
    spawn_ranks,
    train_rank,
    weights_checksum,
)
from wd_teach.train.config import load_config
from wd_teach.train.trainer import Trainer

ENVS, STEPS, ITERATIONS, SEED = 4, 8, 3, 3
TRAIN = ["-m", "wd_teach", "train", "cartpole", "--envs", str(ENVS), "--iterations",
         str(ITERATIONS), "--seed", str(SEED), "--set", f"trainer.steps={STEPS}",
         "--set", "algorithm.num_minibatches=2", "--quiet"]
RANK_LINE = re.compile(r"^rank (\d) of 2: seed (\d+), envs on (\S+), weights ([0-9a-f]{16})$",
                       re.MULTILINE)
LAUNCH = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
          "MASTER_PORT")
TIMEOUT = 240
STOP = 30  # seconds torchrun gets to stop its ranks


def torchrun(*options, out):
    """A torchrun launch of the tiny CartPole run, started now; OMP_NUM_THREADS=1 so the
    ranks share the cores instead of fighting for them."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH}
    # On the CPU (gloo) even on a GPU machine: two ranks on one GPU would be refused.
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *options, *TRAIN,
                             "--out", str(out)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def stop(launch) -> None:
    """SIGTERM: torchrun then stops its ranks (they run in sessions of their own, so a
    SIGKILL to torchrun would leave them running, holding the pipe)."""
    launch.terminate()
    try:
        launch.wait(STOP)
    except subprocess.TimeoutExpired:
        launch.kill()
        launch.wait()


def finish(*launches) -> list[str]:
    """Each launch's output, once all have ended. Every pipe is read as it fills (a full
    pipe would stop its launch), and a launch that fails stops the others at once: torchrun
    agents wait for each other at their exit for 5 minutes, so the nodes of a failed rank
    would otherwise wait out the test. A failure, or a launch still running after TIMEOUT,
    fails the test with every launch's exit status and output."""
    outputs = [[] for _ in launches]
    readers = [threading.Thread(target=lines.extend, args=(launch.stdout,), daemon=True)
               for launch, lines in zip(launches, outputs, strict=True)]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + TIMEOUT
    codes = [launch.poll() for launch in launches]
    while None in codes and not any(codes) and time.monotonic() < deadline:
        time.sleep(0.1)
        codes = [launch.poll() for launch in launches]
    for launch, code in zip(launches, codes, strict=True):
        if code is None:
            stop(launch)
    for reader in readers:
        reader.join(STOP)
    texts = ["".join(lines) for lines in outputs]
    if None in codes or any(codes):
        why = "a launch failed" if any(codes) else f"a launch ran past {TIMEOUT} s"
        pytest.fail(f"{why}:\n" + "\n".join(
            f"--- launch {i}: exit status {launch.returncode}"
            f"{' (stopped by the test)' if code is None else ''} ---\n{text}"
            for i, (launch, code, text) in enumerate(zip(launches, codes, texts, strict=True))))
    return texts


def config():
    return load_config("cartpole", sets=[f"env.num_envs={ENVS}", f"trainer.steps={STEPS}",
                                         "algorithm.num_minibatches=2",
                                         f"trainer.seed={SEED}"], gpu=False)


def ranks(output) -> dict[int, tuple[int, str, str]]:
    """{rank: (seed, device, checksum)} from the line each rank prints at its end."""
    return {int(r): (int(seed), device, checksum)
            for r, seed, device, checksum in RANK_LINE.findall(output)}


def assert_one_run_of_two_ranks(seen, out):
    """Two ranks, seeds SEED and SEED + 1, the same weights: rank 0's checkpoint's, which
    training changed, and which the same ranks started by spawn_ranks reach too."""
    assert sorted(seen) == [0, 1]
    assert {r: seed for r, (seed, _, _) in seen.items()} == {0: SEED, 1: SEED + 1}
    assert seen[0][1] == seen[1][1] == "cpu"
    assert seen[0][2] == seen[1][2], "the ranks' weights differ"
    saved = Trainer.from_checkpoint(out / "checkpoint.safetensors", gpu=False)
    assert weights_checksum(policy_weights(saved)) == seen[0][2]
    assert weights_checksum(policy_weights(Trainer(config()))) != seen[0][2], "never trained"
    history = json.loads((out / "metrics.json").read_text())["history"]
    assert [row["env_steps"] for row in history] == [
        2 * ENVS * STEPS * (i + 1) for i in range(ITERATIONS)]  # both ranks' steps
    spawned = spawn_ranks(2, train_rank, config().to_dict(), ITERATIONS, None, False,
                          gpu=False)[0].weights
    for name, weights in policy_weights(saved).items():
        for key, value in weights.items():
            # The same ranks, up to rounding (threads per process): about 1e-7 apart.
            # Without the averaging they would be some 1e-2 apart.
            torch.testing.assert_close(value, spawned[name][key], rtol=0, atol=1e-5)


@pytest.mark.slow
def test_two_processes_on_one_node(tmp_path):
    out = tmp_path / "run"
    (output,) = finish(torchrun("--standalone", "--nproc-per-node", "2", out=out))
    assert_one_run_of_two_ranks(ranks(output), out)
    assert output.count("writing to") == 1  # rank 0 alone starts the folder
    assert output.count("env steps; last iteration") == 1  # and writes the results


@pytest.mark.slow
def test_two_nodes_on_one_machine(tmp_path):
    """Two torchrun launches, as two machines would start them: --node-rank 0 and 1, rank
    0's address and port given to both."""
    out, port = tmp_path / "run", str(free_port())
    nodes = [torchrun("--nnodes", "2", "--node-rank", str(node), "--nproc-per-node", "1",
                      "--master-addr", "127.0.0.1", "--master-port", port, out=out)
             for node in (0, 1)]
    first, second = finish(*nodes)
    assert list(ranks(first)) == [0] and list(ranks(second)) == [1]  # one rank per node
    assert_one_run_of_two_ranks({**ranks(first), **ranks(second)}, out)
    assert "writing to" in first and "writing to" not in second


def leave_a_group_an_optimiser_saw(rank):
    """In a fresh interpreter: join a group of one, build a rank's trainer in it (its
    optimisers import torch.distributed.nn, whose defaults bind the group), leave."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    with process_group(Place(0, 0, 1, 1), gpu=False):
        rank_trainer(0, config().to_dict())
        group = weakref.ref(dist.group.WORLD)
    assert group() is None, "something still holds the process group after it was left"
    tasks = Path("/proc/self/task")  # Linux: every thread of this process, by name
    if tasks.exists():
        names = [(task / "comm").read_text().strip() for task in tasks.iterdir()]
        assert not [name for name in names if "gloo" in name], names


def test_leaving_the_group_ends_its_threads():
    """A process group outliving process_group keeps gloo's threads running into the
    interpreter's exit, where one still finishing the last all-reduce aborts the process
    (under torchrun, the other nodes then wait for it). Leaving must free it."""
    torch.multiprocessing.spawn(leave_a_group_an_optimiser_saw, nprocs=1, join=True)


def refused_on_rank_zero(rank, world_size):
    """What each rank sees when rank 0 refuses: the same error."""
    calls = []

    def check():
        calls.append(rank)
        raise TrainError("rank 0 found the folder taken")

    try:
        rank_zero_decides(check)
    except TrainError as err:
        return calls, str(err)
    return calls, None


def test_a_refusal_on_rank_zero_stops_every_rank():
    (calls0, error0), (calls1, error1) = spawn_ranks(2, refused_on_rank_zero, gpu=False)
    assert (calls0, calls1) == ([0], [])  # rank 0 alone checks
    assert error0 == error1 == "rank 0 found the folder taken"


# -- the launch variables, read and refused --------------------------------------------------

TORCHRUN = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


def test_torchruns_variables_give_the_place():
    assert launched_place({}) is None  # a plain process
    assert launched_place(TORCHRUN) == Place(rank=1, local_rank=1, world_size=4,
                                             local_world_size=2)
    alone = {k: v for k, v in TORCHRUN.items() if k != "LOCAL_WORLD_SIZE"}
    assert launched_place(alone).local_world_size == 4  # not given: at most all of them


@pytest.mark.parametrize("change, message", [
    ({"RANK": None}, "RANK is not set"),
    ({"WORLD_SIZE": None}, "WORLD_SIZE is not set"),
    ({"MASTER_ADDR": None, "MASTER_PORT": None}, "MASTER_ADDR, MASTER_PORT are not set"),
    ({"RANK": "one"}, "RANK='one' is not a whole number"),
    ({"RANK": "4"}, "0 <= RANK < WORLD_SIZE"),
    ({"LOCAL_RANK": "2"}, "LOCAL_RANK < LOCAL_WORLD_SIZE"),
    ({"LOCAL_WORLD_SIZE": "8"}, "LOCAL_WORLD_SIZE <= WORLD_SIZE"),
    ({"MASTER_PORT": "0"}, "not a TCP port"),
])
def test_a_broken_launch_is_refused(change, message):
    env = {k: v for k, v in {**TORCHRUN, **change}.items() if v is not None}
    with pytest.raises(TrainError, match=re.escape(message)) as caught:
        launched_place(env)
    assert "torchrun --nproc-per-node" in str(caught.value)  # and what to do


def test_more_local_ranks_than_gpus_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    place = Place(rank=1, local_rank=1, world_size=4, local_world_size=2)
    with pytest.raises(MissingPieceError, match="sees 1 GPU .*--nproc-per-node 1 or fewer"):
        check_local_gpus(place, gpu=True)
    check_local_gpus(place, gpu=False)  # CPU processes need no GPU


def launched_as(monkeypatch, **variables):
    for key in LAUNCH:
        monkeypatch.delenv(key, raising=False)
    for key, value in variables.items():
        monkeypatch.setenv(key, value)


@pytest.mark.parametrize("variables, arguments, message", [
    ({"WORLD_SIZE": "2"}, [], "RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT are not set"),
    (TORCHRUN, ["--gpus", "2"], "rank 1 of 4, so it does not take --gpus"),
    (TORCHRUN, ["--resume", "runs/x"], "does not take --resume"),
    (TORCHRUN, ["--envs", "auto"], "does not take --envs auto"),
])
def test_the_command_refuses_a_bad_launch_before_any_work(monkeypatch, capsys, tmp_path,
                                                          variables, arguments, message):
    launched_as(monkeypatch, **variables)
    assert main(["train", "cartpole", "--out", str(tmp_path), *arguments]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_the_command_refuses_more_local_ranks_than_gpus(monkeypatch, capsys, tmp_path):
    """On a machine that looks like one with one GPU, two local ranks are refused before
    the process group is joined (which would wait for the other ranks)."""
    import wd_teach.device

    launched_as(monkeypatch, **TORCHRUN)
    monkeypatch.setattr(wd_teach.device, "gpu_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert main(["train", "cartpole", "--backend", "numba", "--out", str(tmp_path)]) == 2
    assert "2 processes were started on this machine" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
