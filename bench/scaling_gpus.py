"""Benchmark: Tag on one GPU and on two, the plain Trainer and Lightning's DDP, one command.

    python bench/scaling_gpus.py                          # on a machine with 2 GPUs: all
    python bench/scaling_gpus.py --envs 500 --trainers plain        # a part of it
    python bench/scaling_gpus.py --device cpu --out /tmp/scaling.json   # tiny, on the CPU

Weak scaling: each GPU runs as many envs as one GPU alone, 500 and then 10,000 envs of
tag_continuous (10 taggers chasing 100 runners, A2C, its config's sizes), so two GPUs make
twice the experience per iteration. Speed-up: env steps per second on 2 GPUs over those on
1; efficiency: the speed-up over 2; the target is 1.8x (wd_teach.scale.distributed).

Two trainers, the same training:
  plain      wd_teach's Trainer; on 2 GPUs started by torchrun (python -m
             torch.distributed.run --standalone), each rank made data parallel as
             `wd-teach train` under torchrun makes it (wd_teach.scale.distributed);
  lightning  the TrainingModule under Lightning's `Trainer(strategy="ddp", devices=N)`,
             which starts the second process itself (it runs this script again); the
             module switches the DDP wrapper's sync off and averages the gradients as the
             plain ranks do (wd_teach.train.lightning).

Each measurement runs in processes of its own, so each starts on an empty GPU: this script
runs itself as a worker (--worker), once per rank. Each rank times its iterations after the
warm-up and writes its rate, seed and weights' checksum; a row's rate is the sum over its
ranks, and the row says whether the ranks' weights ended identical. A table on screen, and
JSON (the GPU's name, the versions, every rank) in bench/results/scaling_gpus_<gpu>.json.

NVLink multicast stays off for every worker (NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, whatever the shell had): on a
shared multi-GPU host a program that uses it can take the host's GPUs out of service.

With fewer than 2 GPUs the 1-GPU rows run, a line says plainly that the 2-GPU rows were not
run, and the exit status is 3; without a GPU nothing runs (status 2). `--device cpu` runs
the same steps on the CPU, tiny, the ranks joined by gloo: what tests/test_distributed_bench.py
checks. It reports; it never fails on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from wd_teach.scale.scaling_results import FORMAT, scaling_table

HERE = Path(__file__).resolve()
RESULTS = HERE.parent / "results"
ENV = "tag_continuous"
TRAINERS = ("plain", "lightning")
GPU_ENVS, CPU_ENVS = (500, 10_000), (4,)
#: Left off on every worker: see the docstring.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
#: The CPU's tiny rows: its config's small Tag (2 taggers, 5 runners), short rollouts.
CPU_SETS = ["trainer.steps=4"]
#: What a measurement can run for before it counts as failed.
TIMEOUT = {"gpu": 900, "cpu": 300}


# -- one rank of one measurement (--worker) ------------------------------------------------------


def row_config(envs: int, device: str):
    from wd_teach.train.config import load_config

    sets = [f"env.num_envs={envs}", *(CPU_SETS if device == "cpu" else [])]
    return load_config(ENV, sets=sets, gpu=device == "gpu")


def timed_training(trainer, warmup: int, iterations: int, callback=None) -> float:
    """This rank's env steps per second over `iterations` after `warmup` (each iteration
    ends with its metrics on the host, so the device has finished when the clock reads)."""
    trainer.train(warmup, progress=False, callback=callback)
    start = time.perf_counter()
    trainer.train(iterations, progress=False, callback=callback)
    return iterations * trainer.steps_per_iteration / (time.perf_counter() - start)


def plain_worker(args) -> dict:
    """The plain Trainer: alone, or as one rank that torchrun started."""
    from wd_teach.scale.distributed import (
        average_row,
        check_local_gpus,
        launched_place,
        process_group,
        rank_trainer,
    )
    from wd_teach.train.trainer import Trainer

    config, gpu = row_config(args.envs[0], args.device), args.device == "gpu"
    place = launched_place()
    if place is None:
        trainer = Trainer(config, gpu=gpu)
        return part(0, trainer, timed_training(trainer, args.warmup, args.iterations))
    check_local_gpus(place, gpu)
    with process_group(place, gpu):
        trainer = rank_trainer(place.rank, config.to_dict())
        rate = timed_training(trainer, args.warmup, args.iterations, callback=average_row)
        return part(place.rank, trainer, rate)


def lightning_worker(args) -> dict:
    """The TrainingModule under Lightning, on `--gpus` devices (its DDP above one)."""
    import torch.distributed as dist

    from wd_teach.train.lightning import Throughput, TrainingModule, make_lightning_trainer

    module = TrainingModule(row_config(args.envs[0], args.device), gpu=args.device == "gpu")
    clock = Throughput(warmup=args.warmup)
    make_lightning_trainer(module, args.warmup + args.iterations, callbacks=[clock],
                           progress=False, devices=args.gpus).fit(module)
    result = part(module.global_rank, module.run, clock.steps_per_second)
    if dist.is_initialized():
        dist.barrier()  # every rank's part is written before rank 0's process ends
    return result


def part(rank: int, trainer, rate: float) -> dict:
    """What a rank reports: its rate, seed, weights' checksum, and the run's env steps
    (summed over the ranks by the data-parallel averaging)."""
    from wd_teach.scale.distributed import policy_weights, weights_checksum

    return {"rank": rank, "seed": trainer.seed, "env_steps_per_second": rate,
            "env_steps": trainer.history[-1]["env_steps"],
            "checksum": weights_checksum(policy_weights(trainer)),
            "device": str(next(next(iter(trainer.policies.values())).parameters()).device)}


def worker(args) -> int:
    result = (plain_worker if args.worker == "plain" else lightning_worker)(args)
    Path(args.parts, f"rank{result['rank']}.json").write_text(json.dumps(result))
    return 0


# -- the measurements, each in processes of its own ------------------------------------------------


def plan(device: str, gpus_here: int, sizes, trainers) -> tuple[list[tuple], str | None]:
    """The rows to run, (trainer, GPUs, envs per GPU), and a line for those that cannot."""
    counts, note = (1, 2), None
    if device == "gpu" and gpus_here < 2:
        counts = (1,)
        note = (f"this machine has {gpus_here} GPU: the 2-GPU rows were NOT run (they need "
                "2 GPUs); run this script again on a machine with 2 for the speed-up.")
    return [(t, g, e) for e in sizes for t in trainers for g in counts], note


def worker_command(trainer: str, gpus: int, envs: int, args, parts: str) -> list[str]:
    """This script as a worker: under torchrun for the plain Trainer's ranks; Lightning
    starts its own (it runs this same command again for each further rank)."""
    launch = [sys.executable]
    if trainer == "plain" and gpus > 1:
        launch += ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}"]
    return [*launch, str(HERE), "--worker", trainer, "--gpus", str(gpus), "--envs", str(envs),
            "--device", args.device, "--iterations", str(args.iterations),
            "--warmup", str(args.warmup), "--parts", parts]


def worker_env(device: str) -> dict:
    env = {**os.environ, **MULTICAST_OFF, "PYTHONUNBUFFERED": "1"}
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT", "NODE_RANK"):
        env.pop(key, None)  # a fresh launch, whatever this shell was started by
    if device == "cpu":
        env.setdefault("OMP_NUM_THREADS", "1")
    return env


def measure(trainer: str, gpus: int, envs: int, args) -> dict:
    """One row: the worker's processes run, their parts read and summed."""
    row = {"trainer": trainer, "gpus": gpus, "envs_per_gpu": envs}
    with tempfile.TemporaryDirectory(prefix="scaling_gpus_") as parts:
        command = worker_command(trainer, gpus, envs, args, parts)
        try:
            done = subprocess.run(command, env=worker_env(args.device), text=True,
                                  capture_output=True, timeout=TIMEOUT[args.device])
        except subprocess.TimeoutExpired:
            return {**row, "error": f"did not finish in {TIMEOUT[args.device]} s"}
        ranks = sorted((json.loads(p.read_text()) for p in Path(parts).glob("rank*.json")),
                       key=lambda r: r["rank"])
    if done.returncode or len(ranks) != gpus:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        return {**row, "error": f"exit status {done.returncode}, {len(ranks)} of {gpus} "
                                f"ranks reported:\n{tail}"}
    return {**row, "env_steps_per_second": sum(r["env_steps_per_second"] for r in ranks),
            "weights_identical": len({r["checksum"] for r in ranks}) == 1, "ranks": ranks}


def add_speedups(rows: list[dict]) -> None:
    """Each 2-GPU row against the 1-GPU row of its trainer and size."""
    from wd_teach.scale.distributed import TARGET_SPEEDUP

    one = {(r["trainer"], r["envs_per_gpu"]): r for r in rows
           if r["gpus"] == 1 and "error" not in r}
    for row in rows:
        base = one.get((row["trainer"], row["envs_per_gpu"]))
        if base is None or "error" in row:
            continue
        row["speedup"] = row["env_steps_per_second"] / base["env_steps_per_second"]
        row["efficiency"] = row["speedup"] / row["gpus"]
        if row["gpus"] in TARGET_SPEEDUP:
            row["target_speedup"] = TARGET_SPEEDUP[row["gpus"]]


def device_name(device: str) -> str:
    if device == "gpu":
        return torch.cuda.get_device_name(0)
    return f"the CPU ({platform.processor() or platform.machine()})"


def _numbers(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes whole numbers, e.g. 500,10000: {text!r}") from None


def default_out(name: str) -> Path:
    """bench/results/scaling_gpus_<gpu>.json, e.g. scaling_gpus_h200.json."""
    found = re.search(r"\b([A-Z]\d{2,3})\b", name)
    slug = found.group(1).lower() if found else re.sub(r"\W+", "_", name).strip("_").lower()
    return RESULTS / f"scaling_gpus_{slug}.json"


def run(args) -> int:
    os.environ.update(MULTICAST_OFF)
    gpus_here = torch.cuda.device_count()
    if args.device == "gpu" and gpus_here == 0:
        print("no GPU here (torch sees none): nothing was measured. This benchmark needs a "
              "machine with 2 GPUs; `--device cpu` runs the same steps on the CPU, tiny.",
              file=sys.stderr)
        return 2
    sizes = args.envs or (GPU_ENVS if args.device == "gpu" else CPU_ENVS)
    rows, not_run = plan(args.device, gpus_here, sizes, args.trainers)
    if not_run:
        print(not_run, flush=True)
    measured = []
    for trainer, gpus, envs in rows:
        measured.append(measure(trainer, gpus, envs, args))
        done = measured[-1]
        shown = (f"{done['env_steps_per_second']:,.0f} env steps/s" if "error" not in done
                 else "FAILED")
        print(f"  {trainer} on {gpus} {'GPU' if gpus == 1 else 'GPUs'}, {envs:,} envs per "
              f"GPU: {shown}", flush=True)
    add_speedups(measured)
    name = device_name(args.device)
    result = {"format": FORMAT, "env": ENV, "device": name, "gpus_here": gpus_here,
              "iterations": args.iterations, "warmup": args.warmup, "rows": measured,
              "not_run": not_run,
              "environment": {**MULTICAST_OFF},
              "versions": {"python": platform.python_version(), "torch": torch.__version__,
                           "lightning": _version("lightning"),
                           "cuda": torch.version.cuda, "nccl": _nccl()}}
    out = Path(args.out) if args.out else default_out(name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(scaling_table(result))
    print(f"written to {out}")
    if any("error" in row for row in measured):
        return 1
    return 3 if not_run else 0


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _nccl() -> str | None:
    try:
        return ".".join(map(str, torch.cuda.nccl.version()))
    except (AttributeError, RuntimeError, TypeError):
        return None


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                        help="gpu (default): NCCL between GPUs; cpu: tiny, gloo")
    parser.add_argument("--envs", type=_numbers,
                        metavar="N,N", help="envs per GPU (default 500,10000; CPU: 4)")
    parser.add_argument("--trainers", type=lambda t: tuple(t.split(",")), default=TRAINERS,
                        metavar="plain,lightning", help="which trainers (default both)")
    parser.add_argument("--iterations", type=int, help="timed iterations (default 10; CPU 2)")
    parser.add_argument("--warmup", type=int,
                        help="iterations before the clock starts (default 3; CPU 1)")
    parser.add_argument("--out", metavar="FILE.json",
                        help="default: bench/results/scaling_gpus_<gpu>.json")
    parser.add_argument("--worker", choices=TRAINERS, help=argparse.SUPPRESS)
    parser.add_argument("--gpus", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--parts", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cpu = args.device == "cpu"
    args.iterations = args.iterations or (2 if cpu else 10)
    args.warmup = (1 if cpu else 3) if args.warmup is None else args.warmup
    unknown = set(args.trainers) - set(TRAINERS)
    if unknown or not args.trainers:
        parser.error(f"--trainers takes plain and/or lightning, got {','.join(args.trainers)}")
    if args.iterations < 1 or args.warmup < 1:
        parser.error("--iterations and --warmup take at least 1 (the first iteration "
                     "compiles kernels and records CUDA graphs: it is never timed)")
    if args.envs is not None and min(args.envs) < 1:
        parser.error("--envs takes positive numbers of envs per GPU, e.g. 500,10000")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    return worker(args) if args.worker else run(args)


if __name__ == "__main__":
    sys.exit(main())
