"""How much the grid search compares, counted on the CPU: a model of tag_nearest_grid.

    python bench/grid_model.py                       # 1,000 agents, 200 or all in the game
    python bench/grid_model.py --agents 1000 --playing 200 --per-cell 1,2,4

envs/_tag/nearest.cu sorts an env's agents in the game into a square grid (about `per-cell`
to a cell) and each agent searches the cells around its own ring by ring, stopping when its
slots are full and nothing outside the square it searched can be nearer than its last slot.
This model plays that rule on random places and counts, for each agent, the candidates it
compares and the rings it walks; then, for each warp (32 agents in index order, as the
kernel's threads are), its longest lane's count, which is how long the warp runs. A table to
read (bench/NOTES.md, "The seed's size in one call"), not a timing: the kernel's cost is
about the warp's candidates times the instructions of one (the distance and, while some lane
inserts, the insertion into the sorted slots).
"""

from __future__ import annotations

import argparse

import numpy as np


def search(x, y, playing, me, side, nearest):
    """(candidates compared, last ring walked) for agent `me`, as the kernel searches."""
    cell = 1.0 / side
    cx, cy = (min(int(v / cell), side - 1) for v in (x[me], y[me]))
    cells_x = np.minimum((x / cell).astype(int), side - 1)
    cells_y = np.minimum((y / cell).astype(int), side - 1)
    others = playing & (np.arange(x.size) != me)
    for r in range(side):
        inside = (others & (abs(cells_x - cx) <= r) & (abs(cells_y - cy) <= r))
        found = inside.sum()
        margin = min([x[me] - (cx - r) * cell] * (cx - r > 0) + [(cx + r + 1) * cell - x[me]]
                     * (cx + r < side - 1) + [y[me] - (cy - r) * cell] * (cy - r > 0)
                     + [(cy + r + 1) * cell - y[me]] * (cy + r < side - 1), default=np.inf)
        if found >= nearest:
            d2 = (x[inside] - x[me]) ** 2 + (y[inside] - y[me]) ** 2
            last = np.partition(d2, nearest - 1)[nearest - 1]
            if last < 0.999 * margin * margin:
                return found, r
    return found, side - 1


def model(agents, playing, per_cell, nearest=10, warps=64, seed=0):
    """Mean candidates a lane, mean of each warp's longest lane, mean of its last ring."""
    rng = np.random.default_rng(seed)
    side = min(max(int(np.sqrt(playing / per_cell) + 0.5), 1), 32)
    lanes, longest, rings = [], [], []
    while len(longest) < warps:
        x, y = rng.random(agents), rng.random(agents)
        in_game = np.zeros(agents, bool)
        in_game[rng.choice(agents, playing, replace=False)] = True
        counts = np.array([search(x, y, in_game, me, side, nearest) for me in range(agents)])
        lanes.extend(counts[:, 0])
        for w in range(0, agents - 31, 32):
            longest.append(counts[w:w + 32, 0].max())
            rings.append(counts[w:w + 32, 1].max())
    return side, np.mean(lanes), np.mean(longest), np.mean(rings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--playing", default="200,1000", help="agents in the game, commas")
    parser.add_argument("--per-cell", default="2", help="agents a cell the grid is sized for")
    parser.add_argument("--nearest", type=int, default=10)
    args = parser.parse_args()
    print("playing  per cell  side  candidates a lane  a warp's longest lane  its last ring")
    for playing in (int(p) for p in args.playing.split(",")):
        for per_cell in (float(c) for c in args.per_cell.split(",")):
            side, lane, warp, ring = model(args.agents, playing, per_cell, args.nearest)
            print(f"{playing:>7}  {per_cell:>8g}  {side:>4}  {lane:>17.1f}  {warp:>21.1f}  "
                  f"{ring:>13.2f}")


if __name__ == "__main__":
    main()
