"""The continuous Tag game's observe, lesson 06's kernel against its twin behind the fast door
(envs/tag_continuous/observe_fast.cu), on one wrapper and one state: is the twin the same, and
how much faster is the step with it?

    python bench/observe_twin.py out.json                      # 2,000 envs x 1,000 agents
    python bench/observe_twin.py out.json --envs 2 --agents 150 --backends numba

For each backend it makes the game at --agents (params_for_agents, the grid search unless
--search tiles) with the fast floor on, steps it 5 times with random actions, then:

    same        the plain observe launched, its obs and nearest kept; the twin launched on
                the same state: every float and slot equal (a difference is printed, and
                the script exits 1)
    observe ms  the median of --calls launches of each observe alone (CUDA events)
    step ms     the median of --calls whole steps with each (random actions, the same ones)

    --grid-threads 512,256   the step again, with the twin, the grid search in blocks of
                each size (several an env; Env.step_threads), its slots checked equal to
                those of the game's own blocks

A table to read, and a check that fails loudly; bench/NOTES.md reads the H200's numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from functools import partial

import torch

from wd_teach.env.wrapper import EnvWrapper
from wd_teach.floors import set_fast
from wd_teach.launch import launch_geometry
from wd_teach.scale.bench import machine, versions, write_results
from wd_teach.timing import time_calls
from wd_teach.train.config import load_config, make_env

PLAIN = "tag_continuous_observe"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--envs", type=int, default=2000)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--backends", default="pycuda,numba")
    parser.add_argument("--search", default="grid", choices=["grid", "tiles"])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--grid-threads", default="",
                        help="block sizes (commas) to time the step's grid search at")
    args = parser.parse_args(argv)
    set_fast(True)
    base = make_env(load_config("tag_continuous", gpu=True).env)
    env = type(base)(base.config, **base.params_for_agents(args.agents), search=args.search)
    rows, all_same = [], True
    print(f"{args.envs:,} envs x {env.num_agents:,} agents, {env.num_neighbors} nearest, "
          f"search {args.search}, obs {env.observation_space.shape[0]} floats")
    print(f"{'backend':8} {'observe':8} {'threads':>7} {'observe ms':>11} {'step ms':>9} "
          f"{'env steps/s':>12} {'same':>5}")
    for backend in args.backends.split(","):
        wrapper = EnvWrapper(env, args.envs, backend, seed=0, check_actions=False)
        *before, twin = wrapper.step_launches
        if twin[0] == PLAIN:
            print(f"{backend}: the wrapper launches no twin here (fast floor off, or a game "
                  "the stage cannot hold)", file=sys.stderr)
            return 1
        plain = (PLAIN, None, None)
        generator = torch.Generator(device=wrapper.device).manual_seed(0)
        wrapper.auto_reset = False  # the same games throughout: no episode ends in 45 steps
        for _ in range(5):
            wrapper.step(wrapper.random_actions(generator))
        actions = wrapper.random_actions(generator)
        wrapper.put_actions(actions)

        def observe(launch, launcher=wrapper.launcher):
            return partial(launcher.launch, launch[0], grid=launch[1], block=launch[2])

        searched = wrapper.store["nearest"].clone()  # with the grid, the observe's input
        searched_on = {n: wrapper.store[n].clone() for n in ("loc_x", "loc_y", "in_game")}
        observe(plain)()
        want = {n: wrapper.store[n].clone() for n in ("obs", "nearest", "done", "rewards")}
        wrapper.store["obs"].fill_(7.0)  # what the twin fails to write shows
        wrapper.store["nearest"].copy_(searched)
        observe(twin)()
        same = all(torch.equal(want[n], wrapper.store[n]) for n in want)
        if not same:
            bad = [n for n in want if not torch.equal(want[n], wrapper.store[n])]
            print(f"{backend}: the twin differs from the plain observe in {', '.join(bad)}",
                  file=sys.stderr)
            all_same = False
        for launch in (plain, twin):
            alone = time_calls(observe(launch), args.calls, 3, wrapper.device)
            wrapper.step_launches = [*before, launch]
            steps = time_calls(wrapper.step, args.calls, 3, wrapper.device)
            step_ms = statistics.median(steps.per_call) * 1e3
            row = {"backend": backend, "observe": "plain" if launch is plain else "twin",
                   "threads": launch[2][0] if launch[2] else wrapper.launcher.geometry.block[0],
                   "observe_ms": statistics.median(alone.per_call) * 1e3, "step_ms": step_ms,
                   "env_steps_per_s": args.envs / (step_ms / 1e3), "same": same}
            rows.append(row)
            print(f"{backend:8} {row['observe']:8} {row['threads']:>7} {row['observe_ms']:>11.3f} "
                  f"{step_ms:>9.3f} {row['env_steps_per_s']:>12,.0f} {str(same):>5}")
        wrapper.step_launches = [*before, twin]
        for threads in (int(t) for t in args.grid_threads.split(",") if t):
            same = _grid_in_blocks(wrapper, threads, searched_on, searched)
            all_same &= same
            steps = time_calls(wrapper.step, args.calls, 3, wrapper.device)
            step_ms = statistics.median(steps.per_call) * 1e3
            row = {"backend": backend, "observe": "twin", "grid_threads": threads,
                   "step_ms": step_ms, "env_steps_per_s": args.envs / (step_ms / 1e3),
                   "same": same}
            rows.append(row)
            print(f"{backend:8} {'twin':8} {'grid ' + str(threads):>7} {'':>11} "
                  f"{step_ms:>9.3f} {row['env_steps_per_s']:>12,.0f} {str(same):>5}")
        wrapper.step_launches = [*before, twin]
    write_results({"benchmark": "observe_twin", "machine": machine(), "versions": versions(),
                   "envs": args.envs, "agents": env.num_agents, "search": args.search,
                   "obs_size": env.observation_space.shape[0], "calls": args.calls,
                   "rows": rows}, args.out)
    return 0 if all_same else 1


def _grid_in_blocks(wrapper, threads: int, searched_on: dict, searched) -> bool:
    """Put the step's grid search in blocks of `threads` (wrapper.step_launches), and say
    whether, on the state `searched_on`, it finds the slots the game's own blocks found there
    (`searched`). The store's state is put back after."""
    geometry = launch_geometry(wrapper.num_envs, wrapper.num_agents, threads)
    launches = wrapper.step_launches
    at = [kernel for kernel, _, _ in launches].index("tag_nearest_grid")
    launches[at] = ("tag_nearest_grid", geometry.grid, geometry.block)
    now = {n: wrapper.store[n].clone() for n in (*searched_on, "nearest")}
    for n, array in searched_on.items():
        wrapper.store[n].copy_(array)
    wrapper.store["nearest"].fill_(-2)  # a slot the search misses shows
    wrapper.launcher.launch("tag_nearest_grid", grid=geometry.grid, block=geometry.block)
    same = torch.equal(wrapper.store["nearest"], searched)
    for n, array in now.items():
        wrapper.store[n].copy_(array)
    return same


if __name__ == "__main__":
    sys.exit(main())
