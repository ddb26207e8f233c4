"""WarpDrive's own trainer beside ours, end to end: read a versus file, tabulate it, draw it.

`bench/versus_warpdrive.py` runs WarpDrive 2.7.1's trainer and ours on one GPU in one call
and writes JSON of format FORMAT: `device` (the GPU), `warpdrive` (WarpDrive's rows: envs,
env_steps_per_s_total, or an error) and `rows` (ours: setting, backend, num_envs,
env_steps_per_second, error). Absolute rates drift between machines and calls, so every
ratio here is between rows of one file. Notebook 09 reads its saved H100 file through
`versus_results()`, which works for any subset of settings, sizes and backends.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib import pyplot as plt

from wd_teach.backends import ALL
from wd_teach.errors import BenchError
from wd_teach.scale.bench import FORMAT as BENCH_FORMAT
from wd_teach.scale.bench import read_json
from wd_teach.scale.bench_pictures import _plain_numbers, saved_json

FORMAT = "wd-teach-versus-warpdrive/1"
#: Where notebook 09's saved versus file lives, beside the notebooks.
VERSUS = Path("data") / "versus_warpdrive_h100.json"
#: WarpDrive 2.7.1 crashes above this many envs of 110 agents (its sampler's curand states),
#: so the bench runs it only up to here.
WARPDRIVE_MAX_ENVS = 500
#: One colour per setting without its "-shared" suffix; the shared variant is hatched.
PALETTE = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
           "tab:pink", "tab:olive", "tab:cyan"]
WARPDRIVE_COLOR = "0.35"
SHARED = "-shared"


def load_versus(path: str | Path) -> dict:
    """A file `bench/versus_warpdrive.py` wrote, checked to be that."""
    found = read_json(path, "versus-WarpDrive results",
                      f"python bench/versus_warpdrive.py {path}")
    return check_versus(found, str(path))


def versus_results(path: str | Path = VERSUS) -> dict:
    """Notebook 09's saved versus file: from notebooks/data beside the notebook, or, on
    Colab (which opens the notebook alone), from the repository on GitHub."""
    found = saved_json(path, load_versus, FORMAT, "versus-WarpDrive results")
    return check_versus(found, str(path))


def check_versus(found: object, where: str) -> dict:
    """`found` if it has the versus format and its three parts, else a BenchError."""
    if not isinstance(found, dict) or found.get("format") != FORMAT:
        hint = (" It holds `wd-teach bench` results: read those with reference_results()."
                if isinstance(found, dict) and found.get("format") == BENCH_FORMAT else "")
        raise BenchError(f"{where} is not versus-WarpDrive results ({FORMAT}).{hint} Make "
                         "them with `python bench/versus_warpdrive.py OUT.json`.")
    parts = {"device": dict, "warpdrive": list, "rows": list}
    wrong = [name for name, kind in parts.items() if not isinstance(found.get(name), kind)]
    if wrong:
        raise BenchError(f"{where} lacks {', '.join(wrong)} (or has them of the wrong kind): "
                         "it is cut short or edited; write it again with "
                         "`python bench/versus_warpdrive.py OUT.json`.")
    return found


def settings_of(found: dict) -> list[str]:
    """Our settings in the order the bench ran them, each -shared one beside its twin."""
    ran = list(dict.fromkeys(row["setting"] for row in found["rows"]))
    bases = list(dict.fromkeys(s.removesuffix(SHARED) for s in ran))
    return sorted(ran, key=lambda s: (bases.index(s.removesuffix(SHARED)), s.endswith(SHARED)))


def sizes_of(found: dict) -> list[int]:
    """Every number of envs that either side measured, smallest first."""
    return sorted({r["num_envs"] for r in found["rows"]} | {r["envs"] for r in found["warpdrive"]})


def warpdrive_name(found: dict) -> str:
    """'WarpDrive 2.7.1', from the version its rows name."""
    systems = [r.get("system", "") for r in found["warpdrive"]]
    version = next((s.split("-", 1)[1] for s in systems if s.startswith("warpdrive-")), "")
    return f"WarpDrive {version}".strip()


def warpdrive_rates(found: dict) -> dict[int, float | None]:
    """WarpDrive's env steps per second by number of envs (None where it failed)."""
    return {r["envs"]: r.get("env_steps_per_s_total") for r in found["warpdrive"]}


def failure(row: dict | None, num_envs: int) -> str:
    """A short word for a size without a rate: why it has none."""
    if row is None:
        return "not run" if num_envs > WARPDRIVE_MAX_ENVS else "-"
    return "out of memory" if row.get("error", "").startswith("out of memory") else "failed"


def versus_table(found: dict, backends: Sequence[str] | None = None) -> str:
    """Markdown: a line per size, WarpDrive's env steps per second beside each of our
    settings on each backend (or on `backends` only), ours over WarpDrive's in brackets;
    then a note for each row that failed."""
    check_versus(found, "these results")
    keep = set(backends) if backends is not None else {r["backend"] for r in found["rows"]}
    present = {(r["setting"], r["backend"]) for r in found["rows"] if r["backend"] in keep}
    cols = [(s, b) for s in settings_of(found) for b in sorted(keep) if (s, b) in present]
    ours = {(r["setting"], r["backend"], r["num_envs"]): r for r in found["rows"]}
    theirs = {r["envs"]: r for r in found["warpdrive"]}
    base_rate = warpdrive_rates(found)
    head = ["envs", warpdrive_name(found)] + [f"{s} {b}" for s, b in cols]
    lines = [f"GPU: {found['device'].get('name')}. Env steps per second of whole training "
             f"iterations; (x): ours over {head[1]}'s in the same call.", "",
             "| " + " | ".join(head) + " |", "|" + " ---: |" * len(head)]
    for n in sizes_of(found):
        base = base_rate.get(n)
        cells = [f"{n:,}", failure(theirs.get(n), n) if base is None else f"{base:,.0f}"]
        for s, b in cols:
            row = ours.get((s, b, n))
            rate = None if row is None else row.get("env_steps_per_second")
            cell = (failure(row, 0) if rate is None else f"{rate:,.0f}"
                    + (f" ({rate / base:.1f}x)" if base else ""))
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + _notes(found, keep, head[1]))


def _notes(found: dict, backends: set[str], name: str) -> list[str]:
    """A bullet per failed row, and why WarpDrive has no row at the largest sizes."""
    notes = [f"{name} at {r['envs']:,} envs: {_short(r['error'])}" for r in found["warpdrive"]
             if r.get("error")]
    notes += [f"{r['setting']} {r['backend']} at {r['num_envs']:,} envs: {_short(r['error'])}"
              for r in found["rows"] if r.get("error") and r["backend"] in backends]
    measured = {r["envs"] for r in found["warpdrive"]}
    if any(n > WARPDRIVE_MAX_ENVS and n not in measured for n in sizes_of(found)):
        notes.append(f"not run: {name}'s trainer is run up to {WARPDRIVE_MAX_ENVS:,} envs only; "
                     "above that, with games of 110 agents, it crashes.")
    return ["", *(f"- {note}" for note in notes)] if notes else []


def _short(error: str, most: int = 160) -> str:
    """An error on one line, cut to `most` characters."""
    line = re.sub(r"\s+", " ", error).strip()
    return line if len(line) <= most else line[:most - 3] + "..."


def plot_versus(found: dict, backend: str | None = None, ax=None):
    """Grouped bars, one group per number of envs: WarpDrive's env steps per second and each
    of our settings on one backend (PyCUDA where it ran), log scale, each of ours labelled
    with its ratio to WarpDrive's; a size without a rate says why at the bar's foot."""
    check_versus(found, "these results")
    backends = sorted({r["backend"] for r in found["rows"]})
    if backend is None and backends:
        backend = next((b for b in ALL if b in backends), backends[0])  # the list's order
    if backend not in backends:
        raise BenchError(f"these results have no rows on backend {backend!r}; they have "
                         f"{backends or 'none'}.")
    settings, sizes = settings_of(found), sizes_of(found)
    slots = [None, *settings]  # None: WarpDrive
    width = 0.84 / len(slots)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(7.0, 1.0 + 0.3 * len(slots) * len(sizes)), 4.2))
    ours = {(r["setting"], r["num_envs"]): r for r in found["rows"] if r["backend"] == backend}
    theirs = {r["envs"]: r for r in found["warpdrive"]}
    base_rate, name = warpdrive_rates(found), warpdrive_name(found)
    labelled: set = set()
    for i, n in enumerate(sizes):
        base = base_rate.get(n)
        for j, setting in enumerate(slots):
            x = i - 0.42 + width * (j + 0.5)
            row = theirs.get(n) if setting is None else ours.get((setting, n))
            rate = base if setting is None else (row or {}).get("env_steps_per_second")
            if rate is None:
                why = failure(row, n if setting is None else 0)
                if why != "-":  # a size it was not asked to run stays empty
                    ax.text(x, 0.02, why, rotation=90, ha="center", va="bottom", fontsize=7,
                            color="0.3", transform=ax.get_xaxis_transform())
                continue
            label = name if setting is None else setting
            ax.bar(x, rate, width, label="_nolegend_" if label in labelled else label,
                   **_style(setting, settings))
            labelled.add(label)
            if setting is not None and base:
                ax.text(x, rate * 1.06, f"{rate / base:.1f}x", rotation=90, ha="center",
                        va="bottom", fontsize=7)
    _finish(ax, found, sizes, backend, name)
    return ax


def _style(setting: str | None, settings: list[str]) -> dict:
    """WarpDrive grey; a colour per setting, the same hatched for its -shared twin."""
    if setting is None:
        return {"color": WARPDRIVE_COLOR}
    bases = list(dict.fromkeys(s.removesuffix(SHARED) for s in settings))
    color = PALETTE[bases.index(setting.removesuffix(SHARED)) % len(PALETTE)]
    if setting.endswith(SHARED):
        return {"color": color, "hatch": "///", "edgecolor": "white", "linewidth": 0}
    return {"color": color}


def _finish(ax, found: dict, sizes: list[int], backend: str, name: str) -> None:
    """Log scale with room above for the ratios, a tick per size, title, legend."""
    heights = [p.get_height() for p in ax.patches]
    if heights:
        ax.set_yscale("log")
        ax.set_ylim(min(heights) / 4, max(heights) * 4)
        _plain_numbers(ax.yaxis, ax.get_ylim())
    ax.set_xticks(range(len(sizes)), [f"{n:,} envs" for n in sizes])
    ax.set(xlim=(-0.5, len(sizes) - 0.5), ylabel="env steps per second (log)",
           title=f"End to end against {name} on {found['device'].get('name')}\n"
                 f"ours on {backend}; on each bar, its rate over {name}'s")
    ax.title.set_fontsize(10)
    if heights:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
