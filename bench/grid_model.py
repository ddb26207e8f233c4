"""How much the grid search compares, counted on the CPU: a model of tag_nearest_grid.

    python bench/grid_model.py                       # 1,000 agents, 200 or all in the game
    python bench/grid_model.py --agents 1000 --playing 200 --per-cell 1,2,4

envs/_tag/nearest.cu sorts an env's agents in the game into a square grid (about `per-cell` to a
cell) and each agent searches the cells around its own ring by ring, stopping when its slots are
full and nothing outside the square it searched can be nearer than its last slot. This model
plays that rule on random places and counts, for each agent, the candidates it compares and the
cells it walks; then, for each warp (32 agents in index order, as the kernel's threads are, or
with --order cell in the grid's order, cell by cell, as nearest.cu's grid_by_cell gives them to
threads), its turns of the search loop: its longest lane's candidates when each lane takes its
candidates as one run (as nearest.cu walks them), or, when the lanes walk cell by cell in nested
loops, at every cell the fullest lane's. A table to read (bench/NOTES.md, "The seed's size in
one call"), not a timing: the kernel's cost is about the warp's turns times the instructions of
one (the distance and, while some lane inserts, the insertion into the sorted slots).
"""

from __future__ import annotations

import argparse

import numpy as np


def ring_cells(cx, cy, r):
    """The cells of ring r around (cx, cy) in the kernel's walk order: its 8r cells (1 for
    r = 0) as four sides of 2r, clockwise from the top left corner."""
    if r == 0:
        return [(cx, cy)]
    walk = []
    for t in range(8 * r):
        side, along = divmod(t, 2 * r)
        walk.append(((cx - r + along, cy - r), (cx + r, cy - r + along),
                     (cx + r - along, cy + r), (cx - r, cy + r - along))[side])
    return walk


def search(x, y, playing, me, side, nearest):
    """(candidates compared, last ring walked, the candidates of each cell it walked, ring by
    ring in the kernel's order: 0 for a cell off the field) for agent `me`."""
    cell = 1.0 / side
    cx, cy = (min(int(v / cell), side - 1) for v in (x[me], y[me]))
    cells_x = np.minimum((x / cell).astype(int), side - 1)
    cells_y = np.minimum((y / cell).astype(int), side - 1)
    others = playing & (np.arange(x.size) != me)
    counts = np.zeros((side, side), int)
    np.add.at(counts, (cells_y[others], cells_x[others]), 1)
    walked = []
    for r in range(side):
        walked.append([counts[gy, gx] if 0 <= gx < side and 0 <= gy < side else 0
                       for gx, gy in ring_cells(cx, cy, r)])
        inside = (others & (abs(cells_x - cx) <= r) & (abs(cells_y - cy) <= r))
        found = inside.sum()
        margin = min([x[me] - (cx - r) * cell] * (cx - r > 0) + [(cx + r + 1) * cell - x[me]]
                     * (cx + r < side - 1) + [y[me] - (cy - r) * cell] * (cy - r > 0)
                     + [(cy + r + 1) * cell - y[me]] * (cy + r < side - 1), default=np.inf)
        if found >= nearest:
            d2 = (x[inside] - x[me]) ** 2 + (y[inside] - y[me]) ** 2
            last = np.partition(d2, nearest - 1)[nearest - 1]
            if last < 0.999 * margin * margin:
                return found, r, walked
    return found, side - 1, walked


def lockstep(walks):
    """A warp's turns of the search's inner loop when its lanes walk cell by cell together:
    at each cell of each ring, as many as its fullest lane's cell (a lane done adds 0)."""
    rings = max(len(w) for w in walks)
    turns = 0
    for r in range(rings):
        ring = [w[r] if r < len(w) else [] for w in walks]
        turns += sum(max(cells[t] if t < len(cells) else 0 for cells in ring)
                     for t in range(max(len(cells) for cells in ring)))
    return turns


def model(agents, playing, per_cell, nearest=10, warps=64, seed=0, order="index"):
    """Means over lanes and warps: a lane's candidates; a warp's longest lane (its turns when
    each lane takes its candidates as one run, moving on to its next cell within a turn, as
    nearest.cu does), its turns when its lanes walk cell by cell together (nested loops); the
    warp's last ring. order: the warps' agents by "index" or by "cell" (then index)."""
    rng = np.random.default_rng(seed)
    side = min(max(int(np.sqrt(playing / per_cell) + 0.5), 1), 32)
    lanes, longest, together, rings = [], [], [], []
    while len(longest) < warps:
        x, y = rng.random(agents), rng.random(agents)
        in_game = np.zeros(agents, bool)
        in_game[rng.choice(agents, playing, replace=False)] = True
        found = [search(x, y, in_game, me, side, nearest) for me in range(agents)]
        if order == "cell":
            cell = (np.minimum((y * side).astype(int), side - 1) * side
                    + np.minimum((x * side).astype(int), side - 1))
            found = [found[me] for me in np.lexsort((np.arange(agents), cell))]
        lanes.extend(f[0] for f in found)
        for w in range(0, agents - 31, 32):
            warp = found[w:w + 32]
            longest.append(max(f[0] for f in warp))
            rings.append(max(f[1] for f in warp))
            together.append(lockstep([f[2] for f in warp]))
    return side, np.mean(lanes), np.mean(longest), np.mean(together), np.mean(rings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--playing", default="200,1000", help="agents in the game, commas")
    parser.add_argument("--per-cell", default="2", help="agents a cell the grid is sized for")
    parser.add_argument("--nearest", type=int, default=10)
    parser.add_argument("--order", default="index",
                        help="a warp's agents: index, cell, or both, commas")
    args = parser.parse_args()
    print("order  playing  per cell  side  a lane's candidates  a warp's turns: as one run  "
          "cell by cell  last ring")
    for order in args.order.split(","):
        for playing in (int(p) for p in args.playing.split(",")):
            for per_cell in (float(c) for c in args.per_cell.split(",")):
                side, lane, warp, together, ring = model(args.agents, playing, per_cell,
                                                         args.nearest, order=order)
                print(f"{order:<5}  {playing:>7}  {per_cell:>8g}  {side:>4}  {lane:>19.1f}  "
                      f"{warp:>26.1f}  {together:>12.1f}  {ring:>9.2f}")


if __name__ == "__main__":
    main()
