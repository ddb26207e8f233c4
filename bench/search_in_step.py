"""The Tag step at the seed's size with each search, kernel by kernel, and how full the
search grid's cells are: where a step's time goes once the grid has taken the search.

    python bench/search_in_step.py out.json                      # 2,000 envs x 1,000 agents
    python bench/search_in_step.py out.json --envs 2 --backend numpy --runs tag_continuous/grid

Each run (GAME/SEARCH, --runs) makes the game at --agents (its params_for_agents), steps
--envs of them with random actions 5 times, then profiles --steps steps (torch.profiler,
GPU time per step by kernel, on a GPU) and times --steps more with the clock (by then more
runners are tagged, so the clock's steps are not the profiled ones). After them it counts,
in every 50th env, the in-game agents of each cell of the grid search's grid
(grid_side_for: about two agents a cell when all are in game) and keeps the fullest cell's
count: the grid's cost follows its fullest cells. A table to read, never a pass or fail;
bench/NOTES.md ("The grid inside the step, measured") reads the H200's.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from wd_teach.env.wrapper import EnvWrapper
from wd_teach.train.config import load_config, make_env
from wd_teach_envs._tag.game import grid_side_for


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def cell_counts(store, side: int, field_size: float) -> dict:
    """The in-game share of agents, and the fullest grid cell of every 50th env."""
    x, y = (store[k].float().cpu().numpy() for k in ("loc_x", "loc_y"))
    in_game = store["in_game"].cpu().numpy() != 0
    cx = np.clip((x / field_size * side).astype(int), 0, side - 1)
    cy = np.clip((y / field_size * side).astype(int), 0, side - 1)
    cells = cx * side + cy
    fullest = [np.bincount(cells[e][in_game[e]], minlength=side * side).max()
               for e in range(0, cells.shape[0], 50)]
    return {"in_game_share": float(in_game.mean()), "grid_side": side,
            "fullest_cell_median": float(np.median(fullest)), "fullest_cell_max": int(max(fullest))}


def run(game: str, search: str, backend: str, num_envs: int, agents: int, steps: int) -> dict:
    made = time.perf_counter()
    base = make_env(load_config(game, gpu=True).env)
    env = type(base)(base.config, **base.params_for_agents(agents), search=search)
    wrapper = EnvWrapper(env, num_envs, backend, seed=0)
    wrapper.reset()
    generator = torch.Generator(device=wrapper.device).manual_seed(0)
    actions = [wrapper.random_actions(generator) for _ in range(5 + 2 * steps)]
    for a in actions[:5]:
        wrapper.step(a)
    synchronize()
    made = time.perf_counter() - made
    kernels: dict[str, float] = {}
    if wrapper.device.type == "cuda":
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for a in actions[5:5 + steps]:
                wrapper.step(a)
            synchronize()
        for event in prof.events():
            if event.device_type == torch.autograd.DeviceType.CUDA:
                name = event.name.split("(")[0]
                kernels[name] = kernels.get(name, 0.0) + event.device_time / steps
    else:  # no GPU: the steps run, untimed by kernel
        for a in actions[5:5 + steps]:
            wrapper.step(a)
    start = time.perf_counter()
    for a in actions[5 + steps:]:
        wrapper.step(a)
    synchronize()
    wall_ms = (time.perf_counter() - start) / steps * 1e3
    side = grid_side_for(env.num_agents)
    cells = cell_counts(wrapper.store, side, float(env.game_constants()["field_size"]))
    return {"game": game, "search": search, "backend": backend, "num_envs": num_envs,
            "agents": env.num_agents, "made_s": made, "wall_ms": wall_ms,
            "us_per_step": kernels, "cells": cells}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--envs", type=int, default=2000)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--backend", default="pycuda,numba",
                        help="backends for tag_continuous's grid run; the others take the first")
    parser.add_argument("--runs", default="tag_continuous/grid,tag_grid/grid,tag_continuous/tiles",
                        help="GAME/SEARCH, commas")
    args = parser.parse_args()
    backends = args.backend.split(",")
    plan = []
    for spec in args.runs.split(","):
        game, search = spec.split("/")
        more = backends if (game, search) == ("tag_continuous", "grid") else backends[:1]
        plan += [(game, search, b) for b in more]
    rows = []
    for game, search, backend in plan:
        row = run(game, search, backend, args.envs, args.agents, args.steps)
        rows.append(row)
        print(f"{game} {search} {backend}: made in {row['made_s']:.0f} s, "
              f"{row['wall_ms']:.3f} ms a step by the clock, cells {row['cells']}", flush=True)
        for name, us in sorted(row["us_per_step"].items(), key=lambda kv: -kv[1])[:6]:
            print(f"    {name[:48]:48s} {us:9.1f} us", flush=True)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"device": device, "torch": torch.__version__, "rows": rows},
                                   indent=1))


if __name__ == "__main__":
    main()
