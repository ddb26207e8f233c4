"""The two-GPU scaling results that bench/scaling_gpus.py writes: their table, and notebook
09's saved copy (notebooks/data/, or the repository's on Colab)."""

from __future__ import annotations

from pathlib import Path

from wd_teach.scale.bench import read_results

#: The format bench/scaling_gpus.py writes.
FORMAT = "wd-teach-scaling-gpus/1"
#: Notebook 09's saved run, relative to the notebooks folder.
SAVED = Path("data") / "scaling_gpus_h200.json"


def scaling_table(result: dict) -> str:
    """One line per measurement: trainer, envs per GPU, GPUs, env steps per second, and
    against one GPU the speed-up, its efficiency and whether the ranks' weights agreed."""
    lines = [f"{result['env']} on {result['device']} ({result['gpus_here']} GPUs here), "
             f"{result['iterations']} timed iterations after {result['warmup']} of warm-up",
             f"{'trainer':<10} {'envs/GPU':>8} {'GPUs':>4} {'env steps/s':>13} "
             f"{'speed-up':>8} {'efficiency':>10} {'target':>6} {'same weights':>12}"]
    for row in result["rows"]:
        head = f"{row['trainer']:<10} {row['envs_per_gpu']:>8,} {row['gpus']:>4}"
        if "error" in row:
            lines.append(f"{head}  FAILED: {row['error'].splitlines()[0]}")
            continue
        several = row["gpus"] > 1 and "speedup" in row
        speedup = f"{row['speedup']:.2f}x" if several else "-"
        efficiency = f"{row['efficiency']:.0%}" if several else "-"
        target = f"{row['target_speedup']:.1f}x" if "target_speedup" in row else "-"
        same = "yes" if row["weights_identical"] else "NO"
        lines.append(f"{head} {row['env_steps_per_second']:>13,.0f} {speedup:>8} "
                     f"{efficiency:>10} {target:>6} {same:>12}")
    if result.get("not_run"):
        lines.append(result["not_run"])
    return "\n".join(lines)


def load_scaling(path: str | Path) -> dict:
    """A results file of bench/scaling_gpus.py, checked to be one."""
    return read_results(path, FORMAT, "two-GPU results", "bench/scaling_gpus.py",
                        f"python bench/scaling_gpus.py --out {path}")


def saved_scaling(path: str | Path = SAVED) -> dict:
    """Notebook 09's saved two-GPU run: beside the notebook, or on Colab from GitHub."""
    from wd_teach.scale.bench_pictures import saved_json

    return saved_json(path, load_scaling, FORMAT, "two-GPU scaling results")
