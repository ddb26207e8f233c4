"""Every notebook opens with its lesson plan (what you will learn, what it assumes, how long it
takes), and the teacher's guide and the lessons' index agree with the notebooks."""

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
TEACHING = REPO / "docs" / "teaching.md"
TIME = re.compile(r"\*\*Time:\*\* about (\d+) minutes to work through\. Running every cell "
                  r"takes (.+?) on a GPU \(full size\) and (.+?) on a CPU")


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


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
    assert TIME.search(plan.replace("\n", " ")), f"{path.name}: no time on a GPU and a CPU"


def test_the_teachers_guide_times_are_the_notebooks_times():
    rows = {match[0]: match[1:] for match in re.findall(
        r"^\| \[(\d\d_\w+)\]\(\.\./notebooks/\1\.ipynb\) \| (\d+) min \| (.+?) \| (.+?) \|$",
        TEACHING.read_text(), re.MULTILINE)}
    assert sorted(rows) == [p.stem for p in NOTEBOOKS], "docs/teaching.md's time table"
    for path in NOTEBOOKS:
        minutes, gpu, cpu = TIME.search(lesson_plan(path).replace("\n", " ")).groups()
        assert rows[path.stem] == (minutes, gpu, cpu), (
            f"{path.stem}: the notebook says {minutes} min / {gpu} / {cpu}, "
            f"docs/teaching.md says {rows[path.stem]}")


def test_the_lessons_index_lists_every_notebook_in_order():
    index = (REPO / "notebooks" / "README.md").read_text()
    listed = re.findall(r"^\| \[(\d\d_\w+)\]\(\1\.ipynb\)", index, re.MULTILINE)
    assert listed == [p.stem for p in NOTEBOOKS]


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
