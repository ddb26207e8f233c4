"""Data-parallel training: one process per GPU, the gradients averaged over them.

One GPU already steps thousands of environments; a second GPU steps as many again. Each
process (a *rank*, numbered 0 to world_size - 1 over every machine) owns one GPU,
`cuda:local_rank` (its number on its own machine), and builds its own Trainer: its own
environments, seeded `trainer.seed + rank` so that the ranks see different experience, its
own rollouts, which never leave that GPU. The ranks start from the same weights (rank 0's,
broadcast) and keep them the same: after every backward pass the gradients are averaged
over the ranks (one all-reduce) before the optimiser's step, so every rank takes the same
step from the same weights. Per step, only the gradients travel between the GPUs; the
environments and the experience stay where they are.

    history = train_data_parallel("cartpole", world_size=2, iterations=50, out="runs/dp")
    result = scaling_efficiency("tag_continuous", gpus=(1, 2), iterations=20,
                                out="runs/scaling.json")

or from the shell, on one machine: `wd-teach train cartpole --gpus 2` (this module starts
the processes, `spawn_ranks`); on one or several machines, PyTorch's own launcher starts
them and `wd-teach train` reads where it is from torchrun's variables (`launched_place`):

    torchrun --nproc-per-node 2 -m wd_teach train cartpole                  # one machine
    torchrun --nnodes 2 --node-rank 0 --nproc-per-node 8 \
             --master-addr HOST0 --master-port 29500 -m wd_teach train cartpole  # on HOST0
    (the same with --node-rank 1 on the second machine)

`world_size=1` is the plain, one-process Trainer.

What each process does, in order (`process_group` does steps 1 and 2 for both launchers;
`train_rank` steps 3 and 4; the pieces a rank uses, `use_device`, `make_data_parallel`,
`average_metrics` and the rest, live in wd_teach.train.data_parallel, which the Lightning
module of lesson 08 shares):

1. `torch.cuda.set_device(local_rank)`, before anything touches the GPU (`use_device`).
   Every layer below follows the current device: the DataStore puts its arrays on "cuda"
   (the current one), PyCUDA retains the primary context of `torch.cuda.current_device()`
   (wd_teach/cuda_c.py), and Numba takes the context that is current on the thread, which
   torch made current.
2. Join the process group: NCCL between GPUs, gloo between CPU processes. Rank 0 waits at
   MASTER_ADDR:MASTER_PORT: a free port of this machine under `spawn_ranks`, what torchrun
   was given (--master-addr, or its rendezvous) under torchrun.
3. Build the Trainer with seed + rank, then `make_data_parallel`: broadcast rank 0's
   weights, and set every learner's `reduce` hook to `average_gradients`.
   (`finish_step` in wd_teach/train/algorithms/common.py calls `reduce(parameters)` between
   the backward pass and the gradient clip; every rank then clips the same averaged
   gradient. An update with a `reduce` hook is not replayed as a CUDA graph.)
4. Train. After each iteration the metrics row is averaged over the ranks
   (`average_metrics`, one all-reduce); env steps and steps per second are summed. Only
   rank 0 shows a progress bar and writes checkpoints.

Each rank runs as many environments as a one-GPU run: two GPUs make twice the experience
per iteration in about the time of one (weak scaling). `scaling_efficiency` measures how
close to twice: the target is 1.8x the env-steps per second of one GPU at two
(bench/scaling_gpus.py measures it for the plain Trainer and for Lightning).

With PyTorch Lightning: `Trainer(strategy="ddp", devices=N)` starts the processes and joins
the process group itself (`make_lightning_trainer(module, devices=N)` in
wd_teach.train.lightning). Its DistributedDataParallel wrapper syncs gradients in hooks that
expect one backward pass per forward; an RL update makes many (PPO: epochs x minibatches
per training_step), so TrainingModule leaves the wrapper's syncing off (`no_sync` for the
whole fit) and does what `make_data_parallel` does, in `on_train_start`.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import socket
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from wd_teach import backends
from wd_teach.device import gpu_available
from wd_teach.errors import MissingPieceError, TrainError, WdTeachError
from wd_teach.train.config import load_config
from wd_teach.train.data_parallel import (  # the pieces a rank uses, shared with Lightning
    SUMMED,  # noqa: F401 (these four lived here first: still importable from here)
    average_gradients,  # noqa: F401
    average_metrics,  # noqa: F401
    average_row,
    broadcast_weights,  # noqa: F401
    check_world_size,
    make_data_parallel,
    use_device,
)
from wd_teach.train.trainer import Trainer

#: The speed-up over one GPU that two GPUs should reach.
TARGET_SPEEDUP = {2: 1.8}


# -- before any process starts: a port for rank 0 -------------------------------------------------


def free_port() -> int:
    """A TCP port that nothing listens on now: where rank 0 waits for the others."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- where a process sits: torchrun's variables, or the ones spawn_ranks gives ---------------


@dataclass(frozen=True)
class Place:
    """Where one process sits among all of them: `rank` over every machine (it picks the
    seed; rank 0 writes), `local_rank` on its own machine (it picks the GPU,
    cuda:local_rank), and how many processes there are in all and on this machine."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int


#: How a process started by torchrun learns its place (torch.distributed.run sets them all).
LAUNCH_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                    "MASTER_PORT")
TORCHRUN_HINT = ("Start it with torchrun, which sets RANK, LOCAL_RANK, WORLD_SIZE, "
                 "LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT for each process, e.g. "
                 "`torchrun --nproc-per-node 2 -m wd_teach train cartpole`; or unset "
                 "WORLD_SIZE and RANK for a run in one process.")


def launched_place(environ=None) -> Place | None:
    """This process's place when a launcher started it (torchrun, or any launcher that sets
    torchrun's variables, LAUNCH_VARIABLES); None for a plain process (neither WORLD_SIZE
    nor RANK set). A partial or inconsistent set is refused, saying what is wrong, before
    anything waits for the other processes."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env and "RANK" not in env:
        return None
    shown = ", ".join(f"{k}={env[k]}" for k in LAUNCH_VARIABLES if k in env)
    missing = [k for k in LAUNCH_VARIABLES if k != "LOCAL_WORLD_SIZE" and k not in env]
    if missing:
        raise TrainError(f"this process was started as one of several ({shown}), but "
                         f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not "
                         f"set. {TORCHRUN_HINT}")
    numbers = {}
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_PORT"):
        text = env.get(key, env["WORLD_SIZE"] if key == "LOCAL_WORLD_SIZE" else None)
        try:
            numbers[key] = int(text)
        except ValueError:
            raise TrainError(f"{key}={text!r} is not a whole number ({shown}). "
                             f"{TORCHRUN_HINT}") from None
    rank, local, world, local_world = (numbers[k] for k in LAUNCH_VARIABLES[:4])
    if not (0 <= rank < world and 0 <= local < local_world <= world):
        raise TrainError(f"the launch variables do not fit together ({shown}): it takes "
                         "0 <= RANK < WORLD_SIZE and 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE <= "
                         f"WORLD_SIZE. {TORCHRUN_HINT}")
    if not 0 < numbers["MASTER_PORT"] < 65536:
        raise TrainError(f"MASTER_PORT={numbers['MASTER_PORT']} is not a TCP port (1 to "
                         f"65535). {TORCHRUN_HINT}")
    return Place(rank, local, world, local_world)


def check_local_gpus(place: Place, gpu: bool) -> None:
    """On a GPU, this machine must have one GPU for each of its processes (local ranks)."""
    have = torch.cuda.device_count() if gpu else 0
    if gpu and place.local_world_size > have:
        raise MissingPieceError(
            f"{place.local_world_size} processes were started on this machine "
            f"(LOCAL_WORLD_SIZE={place.local_world_size}, torchrun's --nproc-per-node), one "
            f"GPU each, but it sees {have} GPU{'s' if have != 1 else ''}"
            f" (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}). "
            f"Give --nproc-per-node {have} or fewer on this machine.")


@contextmanager
def process_group(place: Place, gpu: bool):
    """Steps 1 and 2 of a process, and leaving the group at the end: its device, then the
    process group (NCCL on GPUs, gloo on the CPU) at MASTER_ADDR:MASTER_PORT.

    Leaving must free the group, so that its threads end here and not at the interpreter's
    exit: a gloo thread still dropping the last all-reduce's tensors while Python shuts
    down aborts the process (SIGABRT), and under torchrun the other nodes then wait for
    it at their exit. torch.distributed.nn.functional binds the group as a default argument
    when it is first imported, and building an optimiser imports it: imported while the
    group exists, it would hold the group for good. Imported first, it binds none."""
    import torch.distributed.nn.functional  # noqa: F401 (imported for its side effect)

    use_device(place.local_rank, gpu, place.local_world_size)
    dist.init_process_group("nccl" if gpu else "gloo", rank=place.rank,
                            world_size=place.world_size)
    try:
        yield place
    finally:
        dist.destroy_process_group()


def rank_zero_decides(fn, *args) -> None:
    """Run `fn(*args)` on rank 0 alone (the checks and writes only rank 0 makes, such as its
    run folder's) and hand its refusal to every rank: a WdTeachError raised on rank 0 is
    raised on every rank with the same message, so all stop together, instead of the others
    waiting for rank 0 until a timeout."""
    refusal = [None]
    if dist.get_rank() == 0:
        try:
            fn(*args)
        except WdTeachError as err:
            refusal = [(type(err), str(err))]
    dist.broadcast_object_list(refusal, src=0)
    if refusal[0] is not None:
        kind, message = refusal[0]
        raise kind(message)


# -- one rank, and the processes ----------------------------------------------------------------


@dataclass
class RankResult:
    """What a rank hands back: the history (averaged over the ranks, so the same on each),
    its seed, its final weights on the CPU, and where its envs' arrays lived."""

    rank: int
    seed: int
    history: list[dict]
    weights: dict[str, dict[str, torch.Tensor]]
    device: str

    @property
    def checksum(self) -> str:
        return weights_checksum(self.weights)


def policy_weights(trainer: Trainer) -> dict[str, dict[str, torch.Tensor]]:
    """Every policy's weights, copied to the CPU."""
    return {name: {k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}
            for name, policy in trainer.policies.items()}


def weights_checksum(weights: dict[str, dict[str, torch.Tensor]]) -> str:
    """A short fingerprint of the weights (SHA-256 of every tensor's bytes, in name order):
    ranks that print the same one hold the same weights, bit for bit."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        for key in sorted(weights[name]):
            digest.update(f"{name}.{key}".encode())
            digest.update(weights[name][key].detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def rank_trainer(rank: int, config: dict) -> Trainer:
    """Step 3: this rank's Trainer, seeded `trainer.seed + rank`, made data parallel (the
    process group joined). Rank 0 writes the run's files, its TensorBoard events too; the
    others only train."""
    seed = config["trainer"]["seed"] + rank
    trainer = Trainer(config, sets=[f"trainer.seed={seed}"], logger=None if rank == 0 else "csv")
    return make_data_parallel(trainer)


def train_rank(rank: int, world_size: int, config: dict, iterations: int | None = None,
               out: str | Path | None = None, progress: bool = True,
               profile: bool = False) -> RankResult:
    """The work of one rank (the process group joined, by `spawn_ranks` or under torchrun
    by `process_group`): `rank_trainer`, trained `iterations`, the rows averaged over the
    ranks; only rank 0 shows progress and writes checkpoints into `out`."""
    trainer = rank_trainer(rank, config)
    trainer.train(iterations, progress=progress and rank == 0, profile=profile,
                  out=out if rank == 0 else None, callback=average_row)
    return RankResult(rank, trainer.seed, trainer.history, policy_weights(trainer),
                      str(trainer.wrapper.store[trainer.wrapper.store.names[0]].device))


def spawn_ranks(world_size: int, fn, *args, gpu: bool) -> list:
    """Start `world_size` processes, each joined to one process group, each running
    `fn(rank, world_size, *args)`; return what each returned, by rank. `gpu`: one GPU per
    process and NCCL between them; else CPU processes and gloo. `fn` must be importable
    (a module-level function): the processes are fresh interpreters (spawn, not fork: a
    forked child cannot use CUDA that its parent started)."""
    check_world_size(world_size, gpu)
    with tempfile.TemporaryDirectory(prefix="wd_teach_ranks_") as folder:
        torch.multiprocessing.spawn(_rank_main, nprocs=world_size, join=True,
                                    args=(world_size, free_port(), gpu, folder, fn, args))
        return [from_plain(torch.load(Path(folder) / f"rank{r}.pt", weights_only=True))
                for r in range(world_size)]


def _rank_main(rank, world_size, port, gpu, folder, fn, args) -> None:
    """A process's first steps: its GPU, the process group, the work, the result to disk
    (a file, not a pipe: a pipe would fill up and block the exit)."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    with process_group(Place(rank, rank, world_size, world_size), gpu):
        torch.save(to_plain(fn(rank, world_size, *args), fn), Path(folder) / f"rank{rank}.pt")


#: The key under which a RankResult travels as a plain dict.
RANK_RESULT = "__wd_teach_rank_result__"
#: What a rank's result may be made of: what torch.load(weights_only=True) reads back, so
#: reading a rank's file never runs code from it (a full pickle would).
PLAIN = (torch.Tensor, str, bool, int, float, type(None))


def to_plain(value, fn=None):
    """`value` as tensors, numbers, strings, and lists, tuples and dicts of them (a
    RankResult as a dict under RANK_RESULT); anything else is refused, naming it."""
    if isinstance(value, RankResult):
        return {RANK_RESULT: to_plain(dict(vars(value)), fn)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, PLAIN):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(to_plain(item, fn) for item in value)
    if isinstance(value, dict) and all(isinstance(k, (str, int)) for k in value):
        return {key: to_plain(item, fn) for key, item in value.items()}
    name = getattr(fn, "__name__", "a rank's function")
    raise TrainError(f"{name} returned a value of type {type(value).__name__}, which a rank "
                     "cannot hand back: results travel as tensors, numbers, strings, and "
                     "lists, tuples and dicts (with str or int keys) of them, read back "
                     "without pickle. Return those instead.")


def from_plain(value):
    """The inverse of `to_plain`: RankResults made again from their dicts."""
    if isinstance(value, dict):
        if set(value) == {RANK_RESULT}:
            return RankResult(**from_plain(value[RANK_RESULT]))
        return {key: from_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(from_plain(item) for item in value)
    return value


# -- the entries --------------------------------------------------------------------------------


def train_data_parallel(env, world_size: int, iterations: int | None = None, *, sets=(),
                        overrides: dict | None = None, out: str | Path | None = None,
                        gpu: bool | None = None, progress: bool = True,
                        profile: bool = False) -> list[dict]:
    """Train on `world_size` GPUs, one process each; returns rank 0's history, whose rows
    are averaged over the ranks (env steps summed). `env`: an env name or any config a
    Trainer takes; `sets`, `overrides` as for a Trainer. `out`: rank 0's checkpoints.
    `gpu=False`: the processes run on the CPU (gloo), as the tests do; None: GPUs if this
    machine has any. `world_size=1` is the plain Trainer in this process."""
    gpu = gpu_available() if gpu is None else bool(gpu)
    config = load_config(env, overrides=overrides, sets=sets, gpu=gpu)  # checked here first
    check_world_size(world_size, gpu)
    if world_size == 1:
        return Trainer(config, gpu=gpu).train(iterations, progress=progress, profile=profile,
                                              out=out)
    on_gpu = gpu and backends.runs_kernels(config.env.backend)  # the NumPy env: the CPU
    results = spawn_ranks(world_size, train_rank, config.to_dict(), iterations,
                          None if out is None else str(out), progress, profile, gpu=on_gpu)
    return results[0].history


def throughput(history: list[dict], warmup: int = 1) -> float:
    """Env steps per second over the iterations after the first `warmup` (which compile
    kernels and fill caches), every rank's steps counted."""
    if len(history) <= warmup:
        raise TrainError(f"{len(history)} iterations leave none to time after {warmup} of "
                         "warm-up: train more iterations.")
    before = history[warmup - 1]["env_steps"] if warmup else 0
    seconds = sum(row["seconds"] for row in history[warmup:])
    return (history[-1]["env_steps"] - before) / seconds


def scaling_efficiency(env, gpus=(1, 2), iterations: int = 20, *, sets=(),
                       overrides: dict | None = None, gpu: bool | None = None,
                       warmup: int = 2, out: str | Path | None = None) -> dict:
    """The same training on each number of GPUs in `gpus`: env steps per second, the
    speed-up over the first count, and the efficiency (speed-up / GPU ratio; 1 is
    perfect). Each GPU runs the config's envs, so N GPUs do N times the work per
    iteration. The target: 1.8x at 2 GPUs. `out`: a JSON file for the result."""
    gpu = gpu_available() if gpu is None else bool(gpu)
    gpus = tuple(gpus)
    if not gpus:
        raise TrainError("gpus lists the numbers of GPUs to compare, e.g. (1, 2); it is empty.")
    for count in gpus:
        check_world_size(count, gpu)
    if iterations <= warmup:
        raise TrainError(f"iterations={iterations} leaves none to time after warmup={warmup}.")
    config = load_config(env, overrides=overrides, sets=sets, gpu=gpu)
    runs = []
    for count in gpus:
        history = train_data_parallel(config, count, iterations, gpu=gpu, progress=False)
        runs.append({"gpus": count, "env_steps_per_second": throughput(history, warmup),
                     "env_steps": history[-1]["env_steps"]})
        gc.collect()  # the one-process run's trainer: its GPU memory back before the next
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    base = runs[0]
    for run in runs:
        run["speedup"] = run["env_steps_per_second"] / base["env_steps_per_second"]
        run["efficiency"] = run["speedup"] / (run["gpus"] / base["gpus"])
        if base["gpus"] == 1 and run["gpus"] in TARGET_SPEEDUP:
            run["target_speedup"] = TARGET_SPEEDUP[run["gpus"]]
    result = {"env": config.env.name, "algorithm": config.algorithm_name,
              "num_envs_per_gpu": config.env.num_envs, "iterations": iterations,
              "warmup": warmup, "device": _device_name(gpu), "runs": runs}
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=1))
    return result


def format_scaling(result: dict) -> str:
    """The result of `scaling_efficiency` as a small table."""
    lines = [f"{result['env']} ({result['algorithm']}), {result['num_envs_per_gpu']} envs "
             f"per GPU, on {result['device']}",
             f"{'GPUs':>4} {'env steps/s':>14} {'speed-up':>9} {'efficiency':>10} {'target':>7}"]
    for run in result["runs"]:
        target = f"{run['target_speedup']:.1f}x" if "target_speedup" in run else "-"
        lines.append(f"{run['gpus']:>4} {run['env_steps_per_second']:>14,.0f} "
                     f"{run['speedup']:>8.2f}x {run['efficiency']:>10.0%} {target:>7}")
    return "\n".join(lines)


def _device_name(gpu: bool) -> str:
    if gpu and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return "the CPU"

