"""The env step, kernel by kernel: GPU time per call of each kernel one step launches.

    python bench/env_kernels.py out.json --env tag_continuous --envs 100,500,10000
    python bench/env_kernels.py out.json --cuda-dir old/ --label before   # another step.cu
    python bench/env_kernels.py out.json --envs 2000 --agents 1000 --set env.params.search=grid

Each row steps `--envs` environments with random actions, `--steps` times after a warm-up,
under torch.profiler, and divides each kernel's summed GPU time by the steps: what a step
costs on the device, kernel by kernel, without the host's launch overhead; "other" is every
other kernel of the step (the reset of finished games, torch's flags), so the row adds up to
the step's GPU time. `--agents N` plays a game of N agents (the env's params_for_agents).
Both backends unless `--backends` says otherwise. `--cuda-dir DIR` loads the CUDA C step from DIR
instead (its step.cu and headers found there first), so that a kernel can be timed beside
an earlier version of itself in one process. A table to read, never a pass or fail.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from wd_teach.env.wrapper import EnvWrapper
from wd_teach.floors import fast_floor
from wd_teach.train.config import load_config, make_env


def from_folder(env, folder: Path):
    """`env`, loading its CUDA C step (and the headers it includes) from `folder`."""
    shared = list(env.shared_cuda)
    env.cuda_sources = lambda: [*shared, folder / "step.cu"]
    env.include_dirs = lambda: [folder, *dict.fromkeys(Path(s).parent for s in shared)]
    return env


def kernel_times(name: str, num_envs: int, backend: str, steps: int,
                 folder: Path | None, agents: int | None = None,
                 sets: tuple[str, ...] = ()) -> dict[str, float]:
    """Microseconds of GPU time per step, by kernel name, and "other" for the rest."""
    env = make_env(load_config(name, gpu=True, sets=sets).env)  # as a GPU run plays it
    if agents is not None:
        env = type(env)(env.config, **env.params_for_agents(agents))
    if folder is not None:
        env = from_folder(env, folder)
    wrapper = EnvWrapper(env, num_envs, backend, seed=0)
    wrapper.reset()
    generator = torch.Generator(device=wrapper.device).manual_seed(0)
    actions = [wrapper.random_actions(generator) for _ in range(steps)]
    for a in actions[:5]:
        wrapper.step(a)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for a in actions:
            wrapper.step(a)
        torch.cuda.synchronize()
    times: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        mine = any(k in event.name for k in env.step_kernels)
        times[event.name if mine else "other"] += event.device_time / steps
    return dict(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--env", default="tag_continuous", help="an env, or several (commas)")
    parser.add_argument("--envs", default="100,500,1000,10000")
    parser.add_argument("--backends", default="pycuda,numba")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--cuda-dir", type=Path, default=None)
    parser.add_argument("--label", default="")
    parser.add_argument("--agents", type=int, default=None,
                        help="a game of this many agents (default: the config's)")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="KEY=VALUE changes to the config, as `wd-teach train --set`")
    args = parser.parse_args()
    rows = []
    backends = ["pycuda"] if args.cuda_dir else args.backends.split(",")
    for name, num_envs, backend in ((name, int(n), backend) for name in args.env.split(",")
                                    for n in args.envs.split(",") for backend in backends):
        times = kernel_times(name, num_envs, backend, args.steps, args.cuda_dir,
                             args.agents, tuple(args.sets))
        rows.append({"label": args.label, "env": name, "num_envs": num_envs,
                     "agents": args.agents, "sets": args.sets,
                     "floor": "fast" if fast_floor("cuda") else "plain",
                     "backend": backend, "us_per_step": times})
        cells = "  ".join(f"{k.split('(')[0]} {v:8.1f}" for k, v in times.items())
        print(f"{args.label:>8} {name} {num_envs:>6} envs {backend:>6}: {cells}  "
              f"total {sum(times.values()):8.1f} us", flush=True)
    record = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}
    previous = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
    previous["runs"].append(record)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(previous, indent=1))


if __name__ == "__main__":
    main()
