"""The Tag games' nearest-neighbour search alone: the tiled search the observe kernels do
against the spatial grid (envs/_tag/nearest.cu and its Numba twin), at the seed's 2,000 envs.

    python bench/nearest.py bench/results/nearest_h200.json
    python bench/nearest.py out.json --envs 500 --agents 110,1000 --backends numba

Each row: a backend, a method and a number of agents; the median time of one search over
every agent of every env (CUDA events, `--calls` timed calls after warm-up), the pairs of
agents it compared a second if it compared them all (num_agents x (num_agents - 1) per env),
and whether its slots equal the other method's on the same field (they must: the tests hold
both to the NumPy reference). A table to read, never a pass or fail. A random field of the
continuous game's size (20 x 20), every agent in the game, 10 nearest.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from pathlib import Path

import numpy as np
import torch

import wd_teach
from wd_teach.timing import time_calls
from wd_teach_envs._tag.nearest import METHODS, NearestSearch, grid_side_for

FIELD = 20.0


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--envs", type=int, default=2000)
    parser.add_argument("--agents", default="110,500,1000")
    parser.add_argument("--nearest", type=int, default=10)
    parser.add_argument("--backends", default="pycuda,numba")
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)
    gpu = torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    rows = []
    print(f"{'backend':<8} {'method':<6} {'agents':>6} {'grid':>5} {'ms/search':>10} "
          f"{'pairs/s':>10} {'same slots':>10}")
    for agents in (int(a) for a in args.agents.split(",")):
        rng = np.random.default_rng(agents)
        shape = (args.envs, agents)
        loc_x = rng.uniform(0, FIELD, shape).astype(np.float32)
        loc_y = rng.uniform(0, FIELD, shape).astype(np.float32)
        in_game = np.ones(shape, np.int32)
        for backend in args.backends.split(","):
            finder = NearestSearch(loc_x, loc_y, in_game, args.nearest, backend,
                                   field_size=FIELD)
            slots = {}
            for method in METHODS:
                timed = time_calls(lambda f=finder, m=method: f.run(m), args.calls, warmup=3,
                                   device=device)
                slots[method] = finder.slots()
                ms = 1e3 * statistics.median(timed.per_call)
                pairs = args.envs * agents * (agents - 1) / (ms / 1e3)
                rows.append({"backend": backend, "method": method, "agents": agents,
                             "envs": args.envs, "nearest": args.nearest,
                             "grid_side": grid_side_for(agents) if method == "grid" else None,
                             "ms_per_search": ms, "pairs_per_second": pairs})
            same = bool(np.array_equal(slots["tiles"], slots["grid"]))
            for row in rows[-len(METHODS):]:
                row["same_slots"] = same
                grid = row["grid_side"] or "-"
                print(f"{backend:<8} {row['method']:<6} {agents:>6} {grid:>5} "
                      f"{row['ms_per_search']:>10.3f} {row['pairs_per_second']:>10.3g} "
                      f"{'yes' if same else 'NO':>10}", flush=True)
    name = torch.cuda.get_device_name(0) if gpu else f"CPU ({platform.processor() or 'cpu'})"
    result = {"benchmark": "nearest", "device": name, "torch": torch.__version__,
              "wd_teach": wd_teach.__version__, "field_size": FIELD, "calls": args.calls,
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
