"""The pictures of 03_sampler: the inverse-CDF draw, and drawn frequencies against their
probabilities. Each returns a `matplotlib.figure.Figure` built without pyplot, so a notebook
shows it once."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from wd_teach.sampler.reference import GoodnessOfFit, inverse_cdf

COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")


def draw_inverse_cdf(probs, u: float) -> Figure:
    """The actions' probabilities laid end to end on [0, 1), a uniform u, and the action
    whose stretch holds u: the one the sampler draws."""
    probs = np.asarray(probs, dtype=np.float32)
    chosen = int(inverse_cdf(probs, np.float32(u)))
    starts = np.concatenate([[0.0], np.cumsum(probs)[:-1]])
    fig = Figure(figsize=(8, 2.2), layout="constrained")
    ax = fig.subplots()
    for action, (start, p) in enumerate(zip(starts, probs, strict=True)):
        ax.barh(0, p, left=start, height=0.5, color=COLOURS[action % len(COLOURS)],
                edgecolor="black" if action == chosen else "white",
                linewidth=2.5 if action == chosen else 1)
        if p > 0.04:
            ax.text(start + p / 2, 0, f"{action}\np={p:.2f}", ha="center", va="center",
                    color="white", fontsize=9)
    ax.axvline(u, color="black", linestyle="--")
    ax.annotate(f"u = {u:.3f}  ->  action {chosen}", (u, 0.3), (u, 0.55), ha="center",
                arrowprops={"arrowstyle": "->"})
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.4, 0.7)
    ax.set_yticks([])
    ax.set_xlabel("running sum of probabilities (the CDF)")
    ax.set_title("Inverse-CDF draw: the action whose stretch holds u", fontsize=11)
    return fig


def draw_frequencies(counts, probs, fit: GoodnessOfFit | None = None,
                     labels: list[str] | None = None) -> Figure:
    """Bars: how often each action was drawn, as a fraction; dots: its probability."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    actions = np.arange(len(counts))
    fig = Figure(figsize=(7, 3), layout="constrained")
    ax = fig.subplots()
    ax.bar(actions, counts / counts.sum(), color=COLOURS[0], label="drawn (fraction)")
    ax.plot(actions, probs, "o", color="black", label="probability")
    ax.set_xticks(actions, labels if labels is not None else [str(a) for a in actions])
    ax.set_xlabel("action")
    ax.set_ylabel("fraction of draws")
    title = f"{int(counts.sum()):,} draws against their probabilities"
    if fit is not None:
        title += (f"\nchi-square {fit.statistic:.1f} on {fit.dof} d.o.f. "
                  f"(critical {fit.critical:.1f} at alpha={fit.alpha:g}): "
                  f"{'passed' if fit.passed else 'FAILED'}")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig
