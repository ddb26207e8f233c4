"""Pictures of benchmark results (wd_teach.scale.bench) and of an auto-scaling fit (autoscale).

Each function takes the results dict that `run_bench` returns (or `load_results` reads
back) and draws on a matplotlib axis, so notebook 09 can put a GPU's saved numbers and
this machine's live ones side by side.
"""

from __future__ import annotations

import json
import textwrap
import urllib.request
from pathlib import Path

from matplotlib import pyplot as plt
from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

from wd_teach.backends import ALL
from wd_teach.errors import BenchError
from wd_teach.lessons.colab import on_colab
from wd_teach.scale.autoscale import WHY
from wd_teach.scale.bench import FORMAT, load_results, rows_of
from wd_teach.train.metrics import PHASES

#: Where notebook 09's saved results live in the repository, beside the notebooks.
REFERENCE = Path("data") / "bench_h100.json"
#: Each backend's own colour (wd_teach/backends), and the sampler's torch row.
COLORS = {**{backend.name: backend.color for backend in ALL}, "torch.multinomial": "tab:orange"}


#: The packages whose versions a figure's caption names.
SHOWN_VERSIONS = ("torch", "numba_cuda", "pycuda")


def describe(results: dict) -> str:
    """One line: where and when the numbers were made, with what."""
    device, versions = results["device"], results["versions"]
    if device["kind"] == "cuda":
        where = (f"{device['name']}, driver {device['driver']} (CUDA {device['driver_cuda']})")
    else:
        where = f"a CPU ({device['cpu']}, {device['cpu_cores']} cores), no GPU"
    made = ", ".join(f"{name} {version}" for name, version in versions.items()
                     if version and name in SHOWN_VERSIONS)
    return f"{where}; {made}; {results['created'][:10]}"


def plot_throughput(results: dict, what: str = "env", *, against: str = "envs",
                    agents: int | None = None, num_envs: int | None = None,
                    per_agent: bool = False, ax=None, label: str = "", style: str = "-o"):
    """Env steps per second (agent steps with `per_agent`) of `what` against the number of
    envs (`against="envs"`, a line per backend and number of agents) or of agents (a line
    per backend and number of envs); log-log. `agents` / `num_envs` keep one of each. A
    line needs two sizes: single measurements are left out."""
    if against not in ("envs", "agents"):
        raise BenchError(f"against is 'envs' or 'agents', not {against!r}.")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.5))
    x_key, other = ("num_envs", "num_agents") if against == "envs" else ("num_agents", "num_envs")
    keep = {"num_agents": agents, "num_envs": num_envs}
    rows = [r for r in rows_of(results, what) if keep[other] in (None, r[other])]
    rate = "agent_steps_per_second" if per_agent else "env_steps_per_second"
    lines: dict[tuple, list] = {}
    for row in rows:
        lines.setdefault((row["backend"], row["device"], row[other]), []).append(row)
    lines = {key: line for key, line in lines.items() if len(line) > 1}
    for (backend, device, value), line in sorted(lines.items()):
        line.sort(key=lambda r: r[x_key])
        name = f"{backend} on {device}, {value:,} {'agents' if other == 'num_agents' else 'envs'}"
        ax.plot([r[x_key] for r in line], [r[rate] for r in line], style,
                color=COLORS.get(backend), alpha=_fade(value, lines), label=name + label)
    ax.set(xscale="log", yscale="log", xlabel=f"number of {against} (log)",
           ylabel=f"{'agent' if per_agent else 'env'} steps per second (log)",
           title=f"{what}: throughput against the number of {against}")
    if ax.lines:
        _label_sizes(ax)
        ax.legend(fontsize=7)
    return ax


def _label_sizes(ax) -> None:
    """Ticks at the sizes measured, written as numbers (1, 10, 1,000), not as powers."""
    sizes = sorted({float(x) for line in ax.lines for x in line.get_xdata()})
    ax.set_xticks(sizes, [f"{x:,.0f}" for x in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    _plain_numbers(ax.yaxis, ax.get_ylim())


def _plain_numbers(axis, limits) -> None:
    """A log axis labelled 1,000 and 0.01 rather than 10^3 and 10^-2; where it spans less
    than a couple of powers of ten, its in-between ticks (2,000, 5,000) are labelled too."""
    plain = FuncFormatter(lambda value, _: f"{value:,.3g}" if value < 1 else f"{value:,.0f}")
    axis.set_major_formatter(plain)
    low, high = sorted(limits)
    axis.set_minor_formatter(plain if high < 100 * low else NullFormatter())


def _fade(value: int, lines: dict) -> float:
    """Later values of the second dimension drawn darker: one colour per backend."""
    values = sorted({key[2] for key in lines})
    return 0.4 + 0.6 * (values.index(value) + 1) / len(values)


def plot_breakdown(results: dict, ax=None):
    """Each profiled training iteration as one bar, split by phase into shares."""
    rows = [r for r in rows_of(results, "train") if r.get("breakdown")]
    if not rows:
        raise BenchError("these results have no profiled training rows: run the bench with "
                         "`train` in what.")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(rows)))
    phases = [*PHASES, "other"]
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "0.7"]
    labels = [f"{r['backend']} on {r['device']}, {r['num_envs']:,} envs" for r in rows]
    left = [0.0] * len(rows)
    for phase, color in zip(phases, colors, strict=True):
        shares = [r["breakdown"].get(phase, 0.0) / _total(r) for r in rows]
        ax.barh(labels, shares, left=left, color=color, label=phase)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    ax.set(xlim=(0, 1), xlabel="share of one profiled iteration",
           title="Where the time of a training iteration goes")
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    return ax


def _total(row: dict) -> float:
    breakdown = row["breakdown"]
    return breakdown.get("total") or sum(breakdown.values()) or 1.0


def plot_ratios(results: dict, what: str | None = None, ax=None):
    """Each row's throughput over the CPU baseline's at the same size, as bars (log)."""
    found = [r for r in results["ratios"] if what is None or r["what"] == what]
    if not found:
        raise BenchError("these results have no ratios: run the bench with --cpu-baseline "
                         "(or with the numpy backend beside the others).")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.5 + 0.4 * len(found)))
    labels = [f"{r['what']}: {r['backend']} on {r['device']}, {r['num_envs']:,} x "
              f"{r['num_agents']}" for r in found]
    ax.barh(labels, [r["ratio"] for r in found],
            color=[COLORS.get(r["backend"], "tab:blue") for r in found])
    ax.axvline(1.0, color="0.3", lw=1)
    ax.set(xscale="log", xlabel="env steps per second / the CPU baseline's (log; 1 = as fast)",
           title="Against the same work on the CPU")
    _plain_numbers(ax.xaxis, ax.get_xlim())
    return ax


def plot_memory_fit(fit, ax=None):
    """An auto-scaling fit: the runs it measured, the line through the last two, the
    budget, and the answer."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2))
    gib = 2**30
    ran = [(n, peak) for n, peak in fit.measured if peak is not None]
    failed = [n for n, peak in fit.measured if peak is None]
    ax.plot(*zip(*[(n, peak / gib) for n, peak in ran], strict=True), "o", color="tab:blue",
            label="measured")
    for order, (n, peak) in enumerate(ran, 1):
        ax.annotate(str(order), (n, peak / gib), textcoords="offset points", xytext=(4, 4),
                    fontsize=7)
    if failed:
        ax.plot(failed, [fit.budget_bytes / gib] * len(failed), "x", color="tab:red",
                label="did not fit")
    most = max(n for n, _ in fit.measured)
    ax.plot([0, most], [fit.base_bytes / gib, (fit.base_bytes + fit.bytes_per_env * most) / gib],
            "--", color="0.4", label="line through the last two")
    ax.axhline(fit.budget_bytes / gib, color="tab:orange", label=f"budget ({fit.fraction:g} of "
                                                                  "free)")
    ax.axvline(fit.num_envs, color="tab:green", label=f"answer: {fit.num_envs:,} envs")
    ax.set(xlabel="envs", ylabel="peak memory (GiB)", title="How many envs fit?")
    ax.legend(fontsize=7)
    return ax


def plot_search(fit, columns: int = 4):
    """An auto-scaling fit run by run: a panel for each run after the first probes, with
    the runs before it (grey), the line the search stood on when it chose this size
    (dashed), the budget, and where the run landed; the last panel marks the answer."""
    gib = 2**30
    first = sum(p.reason == "probe" for p in fit.probes)
    steps = list(range(first, len(fit.probes))) or [len(fit.probes) - 1]
    columns = min(columns, len(steps))
    rows = -(-len(steps) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.9 * rows), sharey=True,
                             squeeze=False, layout="constrained")
    axes = axes.ravel()
    top = 1.1 * max(fit.budget_bytes, *(p.peak_bytes or 0 for p in fit.probes)) / gib
    most = 1.1 * max(p.num_envs for p in fit.probes)
    for ax, i in zip(axes, steps, strict=False):
        probe, before = fit.probes[i], [p for p in fit.probes[:i] if p.peak_bytes is not None]
        ax.plot([p.num_envs for p in before], [p.peak_bytes / gib for p in before], "o",
                color="0.6", label="runs before")
        if probe.line is not None:
            a, b = probe.line
            ax.plot([0, most], [a / gib, (a + b * most) / gib], "--", color="0.3", lw=1,
                    label="the line it stood on")
        ax.axhline(fit.budget_bytes / gib, color="tab:orange", lw=1, label="budget")
        if probe.peak_bytes is None:
            ax.plot(probe.num_envs, 0.97 * top, "x", color="tab:red", ms=9, label="did not fit")
        else:  # from where the search aimed (the budget) to what the run measured
            ax.plot([probe.num_envs] * 2, [fit.budget_bytes / gib, probe.peak_bytes / gib],
                    ":", color="tab:blue", lw=1)
            ax.plot(probe.num_envs, probe.peak_bytes / gib, "o", color="tab:blue", ms=7,
                    label="this run")
        ax.set_title(f"run {i + 1}: {probe.num_envs:,} envs\n"
                     + textwrap.fill(WHY[probe.reason], 38), fontsize=8)
        ax.set(xlim=(0, most), ylim=(0, top), xlabel="envs")
    axes[0].set_ylabel("peak memory (GiB)")
    last = axes[len(steps) - 1]
    last.axvline(fit.num_envs, color="tab:green", label=f"answer: {fit.num_envs:,} envs")
    last.legend(fontsize=7, loc="lower right")
    for ax in axes[len(steps):]:
        ax.set_visible(False)
    fig.suptitle("How many envs fit? The search, run by run")
    return fig


def reference_results(path: str | Path = REFERENCE) -> dict:
    """Notebook 09's saved GPU results: from notebooks/data beside the notebook, or, on
    Colab (which opens the notebook alone), from the repository on GitHub."""
    return saved_json(path, load_results, FORMAT, "wd-teach benchmark results")


def saved_json(path: str | Path, load, form: str, what: str) -> dict:
    """A results file beside the notebooks: `load(path)` where the file is (or off Colab,
    where `load` says it is missing), else the same path under notebooks/ in the
    repository on GitHub, checked to be of format `form`."""
    path = Path(path)
    if path.is_file() or not on_colab():
        return load(path)
    url = f"{_raw_url()}/notebooks/{path.as_posix()}"
    with urllib.request.urlopen(url, timeout=30) as response:
        found = json.loads(response.read())
    if not isinstance(found, dict) or found.get("format") != form:
        raise BenchError(f"{url} is not {what} ({form}).")
    return found


def _raw_url() -> str:
    """raw.githubusercontent.com/OWNER/NAME/main of the repository wd-teach came from."""
    from importlib.metadata import metadata

    from wd_teach.lessons.colab import BRANCH, _github

    urls = metadata("wd-teach").get_all("Project-URL") or []
    home = next(u.split(",", 1)[1].strip() for u in urls if u.lower().startswith("homepage"))
    return f"https://raw.githubusercontent.com/{_github(home)}/{BRANCH}"
