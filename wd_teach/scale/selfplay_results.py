"""The self-play results that bench/selfplay.py writes: their table, and lesson 11's saved
copy (notebooks/data/, or the repository's on Colab)."""

from __future__ import annotations

from pathlib import Path

from wd_teach.scale.bench import read_results

#: The format bench/selfplay.py writes.
FORMAT = "wd-teach-selfplay/1"
#: Lesson 11's saved run, relative to the notebooks folder.
SAVED = Path("data") / "selfplay_cpu.json"


def selfplay_table(result: dict) -> str:
    """Where and how it was measured, then one line per measure and kind: the IQM of the
    taggers' catches per episode over the seeds, its 95% interval, and for the per-seed
    differences (pool - current) what that interval supports."""
    game = result["game"]
    lines = [f"{result['device']}, {result['backend']} backend, lesson 11's {result['sizes']} "
             f"sizes: {game['num_taggers']} taggers, {game['num_runners']} runners, "
             f"{result['envs']} envs, {result['iterations']} iterations, seeds "
             f"{', '.join(map(str, result['seeds']))}",
             f"pool: {result['pool']} snapshots, one every {result['pool_every']} iterations, "
             f"played in {result['pool_play']:.0%} of rollouts",
             f"{'against':<15} {'taggers':<15} {'IQM':>7}  {'95% interval':<17} verdict"]
    for row in result["rows"]:
        interval = f"[{row['low']:.3f}, {row['high']:.3f}]"
        line = f"{row['measure']:<15} {row['kind']:<15} {row['iqm']:>7.3f}  {interval:<17}"
        lines.append(f"{line} {row.get('verdict', '')}".rstrip())
    return "\n".join(lines)


def load_selfplay(path: str | Path) -> dict:
    """A results file of bench/selfplay.py, checked to be one."""
    return read_results(path, FORMAT, "self-play results", "bench/selfplay.py",
                        f"python bench/selfplay.py {path}")


def saved_selfplay(path: str | Path = SAVED) -> dict:
    """Lesson 11's saved self-play comparison: beside the notebook, or on Colab from GitHub."""
    from wd_teach.scale.bench_pictures import saved_json

    return saved_json(path, load_selfplay, FORMAT, "self-play results")
