"""Pictures of a race: two threads adding to one counter, step by step, and the adds that a
plain += loses on a GPU against the number of threads adding at once (races.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib import pyplot as plt

#: (thread, start, length, what it does, the counter after it): plain += and atomic.
PLAIN_STEPS = [(0, 0, 1, "read 5", 5), (1, 1, 1, "read 5", 5), (0, 2, 1, "write 5+1", 6),
               (1, 3, 1, "write 5+1", 6)]
ATOMIC_STEPS = [(0, 0, 2, "atomic +1: 5 -> 6", 6), (1, 2, 2, "atomic +1: 6 -> 7", 7)]


def draw_race(axes=None):
    """Two threads add 1 to a counter that holds 5: with a plain += the second write
    overwrites the first, and the counter ends at 6; with an atomic add it ends at 7."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 2.6), sharey=True)
    for ax, steps, title in ((axes[0], PLAIN_STEPS, "plain +=: ends at 6, one add lost"),
                             (axes[1], ATOMIC_STEPS, "atomic add: ends at 7, none lost")):
        for thread, start, length, what, counter in steps:
            colour = "tab:blue" if thread == 0 else "tab:orange"
            ax.barh(thread, length - 0.1, left=start, color=colour, alpha=0.35,
                    edgecolor=colour)
            ax.text(start + length / 2, thread, what, ha="center", va="center", fontsize=9)
            ax.text(start + length / 2, 1.65, f"counter {counter}", ha="center", fontsize=9)
        ax.set(title=title, xlim=(-0.1, 4), ylim=(-0.6, 2.0), xlabel="time", yticks=[0, 1],
               yticklabels=["thread 0", "thread 1"], xticks=[])
    axes[0].figure.suptitle("A counter at 5, two threads each add 1", y=1.04)
    return axes


def draw_lost_updates(threads: Sequence[int], lost: dict[str, dict[str, np.ndarray]],
                      ax=None):
    """The fraction of adds lost against the threads adding to one counter, per backend
    ({backend: {kernel: fractions}}, from races.lost_updates)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2))
    styles = {"count_plain": "-", "count_atomic": "--"}
    for backend, kernels in lost.items():
        for kernel, fractions in kernels.items():
            ax.plot(threads, 100 * np.asarray(fractions), styles.get(kernel, "-"), marker="o",
                    label=f"{backend}: {kernel}")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="threads adding to one counter at once", ylabel="adds lost (%)",
           ylim=(-5, 105), title="Adds lost by a plain += on this GPU, none by an atomic")
    ax.legend(fontsize=8)
    return ax
