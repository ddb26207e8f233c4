"""The picture of 10_gpu_fundamentals: which 128-byte lines one load of a warp touches.
Returns a `matplotlib.figure.Figure` built without pyplot, so a notebook shows it once."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

WARP = 32
FLOAT_BYTES = 4
LINE_BYTES = 128


def lane_addresses(num_actions: int, action_major: bool) -> np.ndarray:
    """The byte each of a warp's 32 lanes reads at one step of sum_rows' loop (action 0):
    lane k reads row k's first float, `k * num_actions` floats in row-major order, `k`
    floats in action-major order."""
    lanes = np.arange(WARP)
    return lanes * (1 if action_major else num_actions) * FLOAT_BYTES


def draw_warp_loads(num_actions: int = 10) -> Figure:
    """Two strips, row-major (strided) above action-major (coalesced): each lane a dot at
    the byte it reads, each 128-byte line it touches shaded. Fewer lines, fewer bytes moved
    for the same 128 bytes used."""
    fig = Figure(figsize=(9, 3.2), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    span = WARP * num_actions * FLOAT_BYTES
    for ax, action_major in zip(axes, (False, True), strict=True):
        address = lane_addresses(num_actions, action_major)
        lines = np.unique(address // LINE_BYTES)
        for line in lines:
            ax.axvspan(line * LINE_BYTES, (line + 1) * LINE_BYTES, color="#dd8452", alpha=0.25)
        ax.scatter(address, np.arange(WARP), s=10, color="#4c72b0", zorder=3)
        kind = "action-major (coalesced)" if action_major else "row-major (strided)"
        ax.set_title(f"{kind}: {len(lines)} line(s) of {LINE_BYTES} bytes for "
                     f"{WARP * FLOAT_BYTES} bytes used", fontsize=10, loc="left")
        ax.set_ylabel("lane")
        ax.set_xlim(-LINE_BYTES / 4, span)
    axes[-1].set_xlabel(f"byte address (rows of {num_actions} floats)")
    return fig
