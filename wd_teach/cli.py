"""The `wd-teach` command.

    wd-teach doctor            what this machine has, and what to do about what it lacks
    wd-teach demo [--backend]  push a small particle world and step it with a kernel on
                               every backend that runs here, checked against NumPy
    wd-teach train ENV         train on ENV (cartpole, pendulum, tag_continuous, tag_grid)
                               with its default config; metrics, a learning curve and
                               checkpoints go to --out
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

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


def _train(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")  # files only: no window
    from matplotlib import pyplot as plt

    from wd_teach import report
    from wd_teach.trainer import Trainer

    overrides: dict = {}
    if args.backend:
        overrides.setdefault("env", {})["backend"] = args.backend
    if args.envs is not None:
        overrides.setdefault("env", {})["num_envs"] = args.envs
    if args.seed is not None:
        overrides.setdefault("trainer", {})["seed"] = args.seed
    if args.resume:
        trainer = Trainer.from_checkpoint(args.resume)
    else:
        trainer = Trainer(args.config or args.env, overrides={"env": {"name": args.env},
                                                               **overrides}, sets=args.set)
    out = Path(args.out or Path("runs") / trainer.config.env.name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(trainer.config.to_yaml())
    where = "GPU" if trainer.device.type == "cuda" else "CPU"
    print(f"{trainer}\non the {where}; writing to {out}/")
    trainer.train(args.iterations, progress=not args.quiet, profile=args.profile, out=out)

    groups = [g.name for g in trainer.groups]
    report.write_csv(trainer.history, out / "metrics.csv")
    report.write_json(trainer.history, out / "metrics.json", config=trainer.config.to_dict())
    ax = report.plot_learning_curves(trainer.history, groups,
                                     f"{trainer.config.env.name}, "
                                     f"{trainer.config.algorithm_name}")
    ax.figure.savefig(out / "learning_curve.png", dpi=100, bbox_inches="tight")
    plt.close(ax.figure)
    if args.profile:
        ax = report.plot_time_breakdown(trainer.history)
        ax.figure.savefig(out / "time_breakdown.png", dpi=100, bbox_inches="tight")
        plt.close(ax.figure)
    last = trainer.history[-1]
    for group in groups:
        value = trainer.latest(f"{group}/return")
        shown = "no episode ended" if value is None else f"{value:.4g}"
        print(f"{group}: mean episode return {shown}")
    print(f"{trainer.env_steps:,} env steps; last iteration {last['steps_per_second']:,.0f} "
          f"env steps/s. Files: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


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
    train = commands.add_parser("train", help="train policies on an environment")
    train.add_argument("env", help="cartpole, pendulum, tag_continuous or tag_grid")
    train.add_argument("--backend", choices=["pycuda", "numba", "numpy"],
                       help="default: PyCUDA or Numba on a GPU, the NumPy env on a CPU")
    train.add_argument("--envs", type=int, help="environments stepped together")
    train.add_argument("--iterations", type=int, help="rollout-and-update iterations")
    train.add_argument("--config", help="a YAML file laid over the env's defaults")
    train.add_argument("--out", help="output folder (default: runs/ENV)")
    train.add_argument("--seed", type=int)
    train.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="change one setting, e.g. --set trainer.lr=1e-3 (repeatable)")
    train.add_argument("--profile", action="store_true",
                       help="time each phase (policy, sampling, env step, training)")
    train.add_argument("--resume", metavar="CHECKPOINT", help="go on from a checkpoint")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(run=_train)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except wd_teach.WdTeachError as err:
        print(f"wd-teach: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
