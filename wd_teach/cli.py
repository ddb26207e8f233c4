"""The `wd-teach` command.

    wd-teach doctor            what this machine has, and what to do about what it lacks
    wd-teach demo [--backend]  push a small particle world and step it with a kernel on
                               every backend that runs here, checked against NumPy
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import wd_teach
from wd_teach.demo import DEMO_CUDA_C, move, reference_move


def _doctor(args: argparse.Namespace) -> int:
    report = wd_teach.doctor()
    return 0 if report.backends else 1


def _demo(args: argparse.Namespace) -> int:
    sizes = wd_teach.lesson_sizes()
    backends = ([wd_teach.choose_backend(args.backend)] if args.backend
                else list(wd_teach.discover().backends))
    if not backends:
        print("no backend can run kernels here; see `wd-teach doctor`.", file=sys.stderr)
        return 1
    rng = np.random.default_rng(args.seed)
    pos = rng.uniform(-1, 1, (sizes.num_envs, sizes.num_agents)).astype(np.float32)
    vel = rng.uniform(-1, 1, (sizes.num_envs, sizes.num_agents)).astype(np.float32)
    want = pos.copy()
    for _ in range(args.steps):
        want = reference_move(want, vel, dt=0.01)

    print(f"{sizes.num_envs} envs x {sizes.num_agents} agents, {args.steps} steps, "
          f"on {'the GPU' if wd_teach.gpu_available() else 'the CPU (CUDA simulator)'}")
    print(f"{'backend':<8} {'agent-steps/s':>14} {'max |error|':>12}")
    failed = False
    for backend in backends:
        store = wd_teach.DataStore(sizes.num_envs, sizes.num_agents)
        store.push("pos", pos, reset=True)
        store.push("vel", vel)
        store.set_constant("dt", 0.01)
        launcher = wd_teach.KernelLauncher(store, backend)
        launcher.load(DEMO_CUDA_C if backend == "pycuda" else move)
        launcher.launch("move")  # compile and warm up outside the timed loop
        store.restore()
        start = time.perf_counter()
        for _ in range(args.steps):
            launcher.launch("move")
        if store.device.type == "cuda":
            import torch

            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        error = float(np.abs(store.pull("pos") - want).max())
        failed |= not error < 1e-4
        rate = args.steps * sizes.agent_slots / seconds
        print(f"{backend:<8} {rate:>14,.0f} {error:>12.2e}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wd-teach", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("doctor", help="what this machine has for GPU RL").set_defaults(
        run=_doctor)
    demo = commands.add_parser("demo", help="step a particle world on every backend")
    demo.add_argument("--backend", choices=wd_teach.BACKENDS)
    demo.add_argument("--steps", type=int, default=20)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except wd_teach.WdTeachError as err:
        print(f"wd-teach: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
