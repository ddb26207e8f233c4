"""A lesson's times in words, and the places that say its GPU time.

A notebook's times have one source, its metadata (`metadata.wd_teach`): `gpu` is the
seconds of the GPU run whose outputs it carries (`outputs.seconds`) in words, and the lesson
plan (the cell after the title) and docs/teaching.md's table say the same words;
tests/test_lesson_plans.py holds them to it. scripts/gpu_outputs.py calls `say_gpu_time`
after each run (on a copy of the guide beside the notebooks it writes), so a lesson run again
on a GPU says its new time everywhere at once.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEACHING = REPO / "docs" / "teaching.md"
#: The lesson plan's time sentence: minutes to work through, then every cell on a GPU and a CPU.
TIME = re.compile(r"\*\*Time:\*\* about (\d+) minutes to work through\. Running every cell "
                  r"takes (.+?) on a GPU \(full size\) and (.+?) on a CPU")


def cpu_words(seconds: float) -> str:
    """A measured CPU time as the documents say it: rounded up to 5 s, or past a minute and a
    half to whole minutes."""
    if seconds > 90:
        return f"about {math.ceil(seconds / 60)} minutes"
    return f"about {5 * math.ceil(seconds / 5)} s"


def gpu_words(seconds: float) -> str:
    """A GPU time measured by scripts/gpu_outputs.py as the documents say it."""
    if seconds <= 45:
        return "under a minute"
    if seconds <= 75:
        return "about a minute"
    return f"about {math.ceil(seconds / 60)} minutes"


def say_gpu_time(notebook, stem: str, seconds: float, teaching: Path = TEACHING) -> str:
    """Write the words of `seconds` as the GPU time of `notebook` (an nbformat notebook,
    changed in place: its metadata and its lesson plan) and of its row `stem` in
    `teaching` (docs/teaching.md, rewritten). The words."""
    words = gpu_words(seconds)
    notebook.metadata.setdefault("wd_teach", {})["gpu"] = words
    plans = [cell for cell in notebook.cells if cell.get("id") == "lesson-plan"]
    if len(plans) != 1:
        raise ValueError(f"{stem}: {len(plans)} cells with id 'lesson-plan', one is needed")
    plan = plans[0]
    # the sentence may be wrapped over lines: found with the line breaks read as spaces,
    # one character for one, so its place is the same in the cell's own text
    found = TIME.search(plan.source.replace("\n", " "))
    if not found:
        raise ValueError(f"{stem}: the lesson plan has no '**Time:** ...' sentence")
    start, end = found.span(2)
    plan.source = plan.source[:start] + words + plan.source[end:]
    table = teaching.read_text(encoding="utf-8")
    row = re.compile(rf"^(\| \[{re.escape(stem)}\]\(\.\./notebooks/{re.escape(stem)}\.ipynb\) "
                     r"\| \d+ min \| )(.+?)( \| .+? \|)$", re.MULTILINE)
    table, count = row.subn(lambda m: m.group(1) + words + m.group(3), table)
    if count != 1:
        raise ValueError(f"{teaching}: {count} rows for {stem}, one is needed")
    teaching.write_text(table, encoding="utf-8")
    return words

