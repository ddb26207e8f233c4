"""Every notebook opens with its lesson plan (what you will learn, what it assumes, how long it
takes), and the teacher's guide and the lessons' index agree with the notebooks.

A notebook's times have one source, its own metadata (`metadata.wd_teach`): `minutes` to work
through it (a plan), `gpu` (every cell on a GPU, in words, from the seconds of the GPU run
whose outputs it carries, `outputs.seconds`) and `cpu_seconds` (every cell on a CPU,
measured: docs/teaching.md says on what). The lesson plan, docs/teaching.md's table and
notebooks/README.md's index are checked against it here, and so is the three-hour path: the
kernels it has the learner write (three at least, each with its checker) and their minutes,
which must agree with the table of how those minutes were set and fit the path's slots.
"""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from lesson_times import TIME, cpu_words, gpu_words, say_gpu_time  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
TEACHING = REPO / "docs" / "teaching.md"


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_the_gpu_time_is_the_saved_runs():
    """`gpu` says, in words, the seconds of the run whose outputs the notebook carries."""
    for path in NOTEBOOKS:
        meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]["wd_teach"]
        assert meta["gpu"] == gpu_words(meta["outputs"]["seconds"]), path.name


def times(path) -> tuple[str, str, str]:
    """(minutes, GPU, CPU) as the documents write them, from the notebook's metadata."""
    meta = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("wd_teach", {})
    assert isinstance(meta.get("minutes"), int) and isinstance(meta.get("gpu"), str) and (
        isinstance(meta.get("cpu_seconds"), (int, float))), (
        f"{path.name}: metadata.wd_teach needs minutes (to work through), gpu (every cell on "
        "a GPU, in words) and cpu_seconds (every cell on a CPU, measured): the one source of "
        "its times")
    return str(meta["minutes"]), meta["gpu"], cpu_words(meta["cpu_seconds"])


def lesson_plan(path) -> str:
    """The notebook's lesson-plan cell: the markdown cell right after its title."""
    cells = _cells(path)
    title = next(i for i, c in enumerate(cells)
                 if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("# "))
    plan = cells[title + 1]
    assert plan.get("id") == "lesson-plan" and plan["cell_type"] == "markdown", (
        f"{path.name}: the cell after the title is not the lesson plan (id 'lesson-plan')")
    first_code = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    assert title + 1 < first_code, f"{path.name}: the lesson plan must come before any code"
    return "".join(plan["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_opens_with_objectives_prerequisites_and_time(path):
    plan = lesson_plan(path)
    objectives = plan.split("**In this lesson you will**", 1)
    assert len(objectives) == 2, f"{path.name}: no '**In this lesson you will**'"
    bullets = re.findall(r"^- \S", objectives[1].split("**Before it:**")[0], re.MULTILINE)
    assert len(bullets) >= 2, f"{path.name}: fewer than two objectives"
    assert re.search(r"\*\*Before it:\*\* \S", plan), f"{path.name}: no prerequisites"
    found = TIME.search(plan.replace("\n", " "))
    assert found, f"{path.name}: no time on a GPU and a CPU"
    assert found.groups() == times(path), (
        f"{path.name}: the lesson plan says {found.groups()}, its metadata {times(path)}")


def guide_rows(text: str) -> dict[str, tuple[str, str, str]]:
    """docs/teaching.md's time table: notebook stem -> (minutes, GPU, CPU) as written."""
    return {match[0]: match[1:] for match in re.findall(
        r"^\| \[(\d\d_\w+)\]\(\.\./notebooks/\1\.ipynb\) \| (\d+) min \| (.+?) \| (.+?) \|$",
        text, re.MULTILINE)}


def test_the_teachers_guide_times_are_the_notebooks_times():
    rows = guide_rows(TEACHING.read_text())
    assert sorted(rows) == [p.stem for p in NOTEBOOKS], "docs/teaching.md's time table"
    for path in NOTEBOOKS:
        assert rows[path.stem] == times(path), (
            f"{path.stem}: the notebook's metadata says {times(path)}, "
            f"docs/teaching.md says {rows[path.stem]}")


def test_the_lessons_index_lists_every_notebook_in_order_with_its_time():
    index = (REPO / "notebooks" / "README.md").read_text()
    listed = re.findall(r"^\| \[(\d\d_\w+)\]\(\1\.ipynb\) \|.*?\| (\d+) min \|", index,
                        re.MULTILINE)
    assert [stem for stem, _ in listed] == [p.stem for p in NOTEBOOKS]
    for (stem, minutes), path in zip(listed, NOTEBOOKS, strict=True):
        assert minutes == times(path)[0], (
            f"{stem}: notebooks/README.md says {minutes} min, the notebook's metadata "
            f"{times(path)[0]}")


def test_cpu_times_are_rounded_up_to_five_seconds_or_whole_minutes():
    assert [cpu_words(s) for s in (4.2, 5, 19.1, 71, 539.1)] == [
        "about 5 s", "about 5 s", "about 20 s", "about 75 s", "about 9 minutes"]


def test_the_teachers_guide_cites_files_that_exist_and_the_sources():
    text = TEACHING.read_text()
    cited = set(re.findall(r"`((?:bench|notebooks)/[\w./-]+\.(?:json|log|md))`", text))
    assert cited, "docs/teaching.md quotes no measured results"
    assert [c for c in sorted(cited) if not (REPO / c).is_file()] == []
    for source in ["arxiv.org/abs/2108.13976", "arxiv.org/abs/1602.01783",
                   "arxiv.org/abs/1707.06347", "arxiv.org/abs/1506.02438",
                   "docs.nvidia.com/cuda/cuda-c-programming-guide", "nvidia.github.io/numba-cuda",
                   "lightning.ai/docs/pytorch"]:
        assert source in text, f"docs/teaching.md does not link {source}"
    for link in re.findall(r"\]\((\.\./[^)#]+)", text):
        assert (TEACHING.parent / link).resolve().exists(), f"docs/teaching.md: broken {link}"


def _rows(section: str) -> list[list[str]]:
    """The cells of a markdown table's body rows in `section` (header and rule left out)."""
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| ")]
    return [row for row in rows[1:] if not set(row[0]) <= set("- ")]


def test_the_three_hour_path_has_the_learner_write_three_checked_kernels_in_time():
    text = TEACHING.read_text()
    section = text.split("## A three-hour workshop", 1)[1].split("\n## ", 1)[0]
    path_table, kernels_table = section.split("### ", 1)
    path = _rows(path_table)
    starts = [int(h) * 60 + int(m) for h, m in (row[0].split(":") for row in path)]
    assert starts[0] == 0 and starts == sorted(set(starts)) and starts[-1] < 180, starts
    slots = [b - a for a, b in zip(starts, starts[1:] + [180], strict=True)]
    written = {}
    for row, slot in zip(path, slots, strict=True):
        if not row[3]:
            continue
        found = re.fullmatch(r"(`\w+`(?: and `\w+`)?) \(`(check_\w+)`\), (\d+) min", row[3])
        assert found, f"the path's row at {row[0]}: '{row[3]}' is not 'kernel (checker), N min'"
        lesson = row[1][:2]
        notebook = next(p for p in NOTEBOOKS if p.stem.startswith(lesson))
        assert found[2] in notebook.read_text(), f"{notebook.name} does not call {found[2]}"
        module = __import__(f"wd_teach.exercises.lesson_{lesson}", fromlist=[found[2]])
        assert callable(getattr(module, found[2], None)), f"no {found[2]} for lesson {lesson}"
        assert int(found[3]) < slot, f"{found[1]}: {found[3]} min in a {slot}-minute slot"
        written[found[2]] = (found[1], lesson, f"{found[3]} min")
    assert len(written) >= 3, "the three-hour path has the learner write fewer than 3 kernels"
    timed = {row[2].strip("`"): (row[0], row[1], row[3]) for row in _rows(kernels_table)}
    assert timed == written, "the path's kernels and minutes differ from the table below it"


def test_a_lesson_run_again_says_its_new_gpu_time_everywhere(tmp_path):
    """scripts/gpu_outputs.py's `say_gpu_time`: a new run's seconds become the words of the
    notebook's metadata, its lesson plan and its row of the guide, and this file's checks then
    hold on them (here on copies of lesson 10 and the guide), the other rows unchanged."""
    path = REPO / "notebooks" / "10_gpu_fundamentals.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["wd_teach"]["outputs"]["seconds"] = 200  # as gpu_outputs.py sets it
    teaching = tmp_path / "teaching.md"
    teaching.write_text(TEACHING.read_text())
    assert say_gpu_time(notebook, path.stem, 200, teaching) == "about 4 minutes"
    copy = tmp_path / path.name
    nbformat.write(notebook, copy)
    meta = json.loads(copy.read_text(encoding="utf-8"))["metadata"]["wd_teach"]
    assert meta["gpu"] == gpu_words(meta["outputs"]["seconds"]) != gpu_words(75)
    found = TIME.search(lesson_plan(copy).replace("\n", " "))
    assert found.groups() == times(copy)
    rows = guide_rows(teaching.read_text())
    assert rows[path.stem] == times(copy)
    changed = [(old, new) for old, new in zip(TEACHING.read_text().splitlines(),
                                              teaching.read_text().splitlines(), strict=True)
               if old != new]
    assert len(changed) == 1 and changed[0][1].startswith("| [10_gpu_fundamentals]")
    with pytest.raises(ValueError, match="0 rows for 99_none"):
        say_gpu_time(notebook, "99_none", 10, teaching)
