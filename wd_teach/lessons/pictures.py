"""The pictures the notebooks teach with, drawn with matplotlib.

Each function returns a `matplotlib.figure.Figure` built without pyplot, so a notebook shows
it once (as the cell's value) and a re-run does not pile up open figures.

    draw_data_flow()                         why end-to-end is fast: who copies what, when
    draw_grid(num_envs, num_agents, ...)     the launch grid: block = environment, thread = agent
    draw_store(store)                        what a DataStore keeps on the device
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

from wd_teach.data import DataStore
from wd_teach.errors import StoreError
from wd_teach.launch import MAX_THREADS_PER_BLOCK, launch_geometry

AGENT_COLOUR = "#4c72b0"
IDLE_COLOUR = "#dddddd"
BLOCK_COLOURS = ("#dd8452", "#55a868", "#c44e52", "#8172b3")
HOST_COLOUR = "#f2e6c9"
DEVICE_COLOUR = "#d6e4f0"
LAYOUT_COLOURS = {"env": "#dd8452", "agent": "#4c72b0", "shared": "#55a868"}


# -- why end-to-end is fast ----------------------------------------------------------------


def draw_data_flow() -> Figure:
    """Two training loops side by side: one that crosses the bus every step, one that does not.

    The arrows are the point: on the left, observations, rewards and actions travel between
    host and device on every step; on the right, data is pushed once and only pulled to look.
    """
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    for ax, title in ((left, "CPU simulation, GPU training"),
                      (right, "End to end on the GPU")):
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        ax.axis("off")
        ax.set_title(title, fontsize=12)
        ax.add_patch(Rectangle((0.3, 6.2), 9.4, 3.0, facecolor=HOST_COLOUR, edgecolor="grey"))
        ax.add_patch(Rectangle((0.3, 0.4), 9.4, 3.8, facecolor=DEVICE_COLOUR,
                               edgecolor="grey"))
        ax.text(0.5, 8.9, "host: CPU and its memory", va="top", fontsize=9, color="dimgrey")
        ax.text(0.5, 3.9, "device: GPU and its memory", va="top", fontsize=9, color="dimgrey")

    left.text(5, 7.3, "step every environment\n(one after another)", ha="center", fontsize=10)
    left.text(5, 1.9, "policy: choose actions\ntrain on the batch", ha="center", fontsize=10)
    _arrow(left, (2.0, 6.1), (2.0, 4.3), "observations,\nrewards")
    _arrow(left, (7.6, 4.3), (7.6, 6.1), "actions")
    left.text(5, 5.2, "every step,\nboth ways", ha="center", va="center", fontsize=9,
              color="firebrick", fontweight="bold")

    right.text(5, 7.3, "set up once, look now and then", ha="center", fontsize=10)
    right.text(5, 1.3, "step all environments at once  >  sample actions\n"
               ">  reset the finished ones  >  train\n(one data store, read in place)",
               ha="center", fontsize=10)
    _arrow(right, (2.0, 6.1), (2.0, 4.3), "push once")
    _arrow(right, (7.6, 4.3), (7.6, 6.1), "pull only\nto look", dashed=True)
    return fig


def _arrow(ax, start, end, label, dashed=False):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=18, lw=2,
                                 color="black", linestyle="--" if dashed else "-"))
    ax.text(start[0] + 0.25, (start[1] + end[1]) / 2, label, va="center", fontsize=9)


# -- the launch grid -----------------------------------------------------------------------


def draw_grid(num_envs: int, num_agents: int, max_threads: int = MAX_THREADS_PER_BLOCK, *,
              max_envs: int = 4, max_blocks: int = 4, max_cells: int = 12) -> Figure:
    """The grid `KernelLauncher` would launch: one row of blocks per environment, one thread
    (a small square) per agent, grey squares for threads past the last agent.

    The shape comes from `launch_geometry`, so the picture is the real launch. Big grids are
    drawn in part: the first rows, blocks and threads, then '...' and the last one.
    """
    geometry = launch_geometry(num_envs, num_agents, max_threads)
    threads, blocks = geometry.threads, geometry.blocks_per_env
    rows = _shown(num_envs, max_envs)
    block_cols = _shown(blocks, max_blocks)
    thread_cols = _shown(threads, max_cells)

    block_width = len(thread_cols) + 0.6
    width = len(block_cols) * block_width
    fig = Figure(figsize=(min(14.0, max(8.0, 3.5 + 0.45 * width)), 1.8 + 0.55 * len(rows)),
                 layout="constrained")
    ax = fig.subplots()
    label_ids = len(thread_cols) * len(block_cols) <= 24

    for r, env in enumerate(rows):
        y = len(rows) - 1 - r
        if env is None:
            ax.text(width / 2, y + 0.4, f"... {num_envs - len(rows) + 1:,} more environments",
                    ha="center", va="center", fontsize=9)
            continue
        for c, block in enumerate(block_cols):
            x0 = c * block_width
            if block is None:
                ax.text(x0 + block_width / 2, y + 0.4, "...", ha="center", va="center")
                continue
            colour = BLOCK_COLOURS[block % len(BLOCK_COLOURS)]
            ax.add_patch(Rectangle((x0 + 0.1, y), len(thread_cols) + 0.4, 0.8, fill=False,
                                   edgecolor=colour, lw=2))
            for t, thread in enumerate(thread_cols):
                x = x0 + 0.3 + t
                if thread is None:
                    ax.text(x + 0.4, y + 0.4, "...", ha="center", va="center", fontsize=8)
                    continue
                agent = block * threads + thread
                busy = agent < num_agents
                ax.add_patch(Rectangle((x, y + 0.1), 0.8, 0.6,
                                       facecolor=AGENT_COLOUR if busy else IDLE_COLOUR,
                                       edgecolor="white", hatch=None if busy else "//"))
                if busy and label_ids:
                    ax.text(x + 0.4, y + 0.4, str(agent), ha="center", va="center",
                            fontsize=8, color="white")

    for c, block in enumerate(block_cols):
        if block is not None:
            ax.text(c * block_width + block_width / 2, len(rows) - 0.05, f"blockIdx.y = {block}",
                    ha="center", va="bottom", fontsize=8)
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-0.3, len(rows) + 0.3)
    ax.set_yticks([len(rows) - 1 - r + 0.4 for r, e in enumerate(rows) if e is not None])
    ax.set_yticklabels([f"env {e}" for e in rows if e is not None])
    ax.set_xticks([])
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.set_ylabel("environment = blockIdx.x")
    ax.set_xlabel("agent = blockIdx.y * blockDim.x + threadIdx.x")
    idle = num_envs * (blocks * threads - num_agents)
    ax.set_title(f"{num_envs:,} envs x {num_agents:,} agents\ngrid {geometry.grid} blocks of "
                 f"{threads:,} threads ({idle:,} idle)", fontsize=11)
    ax.legend(handles=[
        Patch(facecolor=AGENT_COLOUR, label="thread with an agent"),
        Patch(facecolor=IDLE_COLOUR, hatch="//", label="idle thread (no agent)"),
        Patch(fill=False, edgecolor=BLOCK_COLOURS[0], lw=2, label="block"),
    ], loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    return fig


def _shown(count: int, most: int) -> list[int | None]:
    """Which of `count` items to draw: all of them, or the first few, a gap (None), the last."""
    if count <= most:
        return list(range(count))
    return [*range(most - 2), None, count - 1]


# -- the data store ------------------------------------------------------------------------


def draw_store(store: DataStore) -> Figure:
    """One bar per array: its live bytes on the device, plus its pristine copy if it resets.

    Shows two things at a glance: the per-agent arrays dominate, and reset=True doubles an
    array's memory.
    """
    infos = [store.info(name) for name in store.names]
    if not infos:
        raise StoreError("the store has no arrays yet: push some before drawing it.")
    fig = Figure(figsize=(8, 1.2 + 0.45 * len(infos)), layout="constrained")
    ax = fig.subplots()
    y = list(range(len(infos)))[::-1]
    live = [info.nbytes for info in infos]
    pristine = [info.nbytes if info.reset else 0 for info in infos]
    colours = [LAYOUT_COLOURS[info.per] for info in infos]
    ax.barh(y, live, color=colours)
    ax.barh(y, pristine, left=live, color="white", edgecolor=colours, hatch="//")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{i.name}  {i.dtype.name} {i.shape}" for i in infos], fontsize=9)
    ax.set_xlabel(f"bytes on {store.device}")
    ax.set_title(f"What the store keeps on {store.device} "
                 f"({sum(live) + sum(pristine):,} bytes in all)", fontsize=11)
    ax.legend(handles=[
        *(Patch(color=c, label=f'per="{per}"') for per, c in LAYOUT_COLOURS.items()),
        Patch(facecolor="white", edgecolor="grey", hatch="//", label="pristine copy (reset)"),
    ], loc="lower right", fontsize=8)
    return fig
