"""The lessons' exercises as nbgrader assignments (wd_teach/room/), graded for real.

The slow tests run nbgrader as a room does, through its exchange folder: the teacher
makes the course from notebooks/, generates and releases an assignment; two learners fetch
it, one answers wrong and one right, both submit; the teacher collects and autogrades, and
`wd-teach grades` shows 0 and full. The checker that grades is the lesson's own.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from wd_teach.cli import main as wd_teach_cli
from wd_teach.room.assignments import (
    BEGIN,
    END,
    NOTEBOOKS,
    POINTS,
    CourseError,
    assignment_of,
    find_exercises,
    lessons_with_exercises,
    make_course,
    split_trailer,
)

LESSON = "01_data_push"
RIGHT = '''def build_store(heading):
    store = wd_teach.DataStore(*heading.shape)
    store.push("heading", heading.astype(np.float32), per="agent", reset=True)
    return store
'''
#: Known wrong: float32 and per agent, but no pristine copy, so a reset cannot restore it.
WRONG = RIGHT.replace(", reset=True", "")


def graded(nb) -> dict[str, nbformat.NotebookNode]:
    """An assignment's nbgrader cells by grade_id."""
    return {c.metadata.nbgrader.grade_id: c for c in nb.cells if "nbgrader" in c.metadata}


def test_every_lesson_with_an_exercise_becomes_an_assignment(tmp_path):
    written = make_course(tmp_path / "course")
    lessons = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert [p.parent.name for p in written] == lessons_with_exercises() == lessons
    for path in written:
        lesson = nbformat.read(NOTEBOOKS / path.name, 4)
        made = nbformat.read(path, 4)
        cells = graded(made)
        tests = [c for c in cells.values() if c.metadata.nbgrader.grade]
        assert len(tests) == len(find_exercises(lesson)) >= 1
        for test in tests:  # the folded solution's own check, worth POINTS, locked
            assert test.metadata.nbgrader.points == POINTS and test.metadata.nbgrader.locked
            assert "check_" in test.source
        for answer in (c for c in cells.values() if c.metadata.nbgrader.solution):
            assert answer.source.count(BEGIN) == answer.source.count(END) == 1
        assert not any(c.metadata.get("jupyter", {}).get("source_hidden") for c in made.cells)
        assert (tmp_path / "course" / "nbgrader_config.py").is_file()


def test_the_test_cell_is_the_lessons_own_check():
    lesson = nbformat.read(NOTEBOOKS / "03_sampler.ipynb", 4)
    (exercise,) = find_exercises(lesson)
    cells = graded(assignment_of(lesson, "03_sampler"))
    _, check = split_trailer(lesson.cells[exercise.solutions[-1]].source, "03")
    call = "verdict = check_draw_kernels(draw_actions, DRAW_ACTIONS, backend)"
    assert check.startswith(call) and "verdict.passed_here" in check
    test = cells["draw_kernels-test"].source  # the same call; the assert made strict
    assert test.startswith(call) and test.endswith("\nassert verdict, verdict")
    assert "passed_here" not in test
    stub = lesson.cells[exercise.stubs[1]].source  # the Numba stub, then the solution
    assert cells["draw_kernels-answer-2"].source.startswith(split_trailer(stub, "03")[0])


def free_names(source: str) -> set[str]:
    """The names a cell reads that it does not define and Python does not provide."""
    import ast
    import builtins

    tree = ast.parse(source)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}
    return read - set(dir(builtins))


@pytest.mark.parametrize("lesson", ["02_kernel_launch", "03_sampler", "04_reset_and_log",
                                    "05_custom_env", "06_tag", "10_gpu_fundamentals"])
def test_a_grade_never_counts_cuda_c_that_did_not_run(lesson):
    """The lesson's solution cell passes on a machine without PyCUDA on what it could run;
    its test cell, run as nbgrader runs it, scores 0 for the same verdict (a right Numba
    half, the CUDA C never run) and full marks only where both halves ran and were right."""
    from wd_teach.exercises.verdict import Verdict

    made = assignment_of(nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", 4), lesson)
    tests = [c.source for c in graded(made).values()
             if c.metadata.nbgrader.grade and c.source.startswith("verdict = check_")]
    assert tests, f"{lesson} has a two-language exercise"
    half = Verdict(right=("Numba",), not_run=(("CUDA C", "PyCUDA is not installed"),))
    whole = Verdict(right=("Numba", "CUDA C"))
    for source in tests:
        checker = source.split("=", 1)[1].split("(")[0].strip()
        for verdict, scores in [(half, False), (whole, True)]:
            space = {name: None for name in free_names(source)}  # the lesson's kernels
            space[checker] = lambda *args, v=verdict, **kwargs: v
            try:
                exec(compile(source, f"{lesson} test cell", "exec"), space)
            except AssertionError as failed:
                assert not scores and "NOT run or not checked whole here: CUDA C" in str(failed)
            else:
                assert scores, f"{lesson}: {checker}'s CUDA C never ran, yet it scored"


def test_a_lesson_that_cannot_be_graded_is_refused_with_what_to_do(tmp_path):
    lesson = nbformat.read(NOTEBOOKS / "03_sampler.ipynb", 4)
    (exercise,) = find_exercises(lesson)
    del lesson.cells[exercise.solutions[0]]  # one stub left without its solution
    with pytest.raises(CourseError, match="2 cell.s. to fill in but 1 folded solution"):
        find_exercises(lesson, "03_sampler")
    with pytest.raises(CourseError, match="no statement calls a checker"):
        split_trailer("x = 1\nassert x", "a cell")
    with pytest.raises(CourseError, match="no lesson '99_none'.*00_welcome"):
        make_course(tmp_path, ["99_none"])
    (tmp_path / "file").write_text("")
    with pytest.raises(CourseError, match="is a file"):
        make_course(tmp_path / "file")
    assert wd_teach_cli(["grades", "--course", str(tmp_path)]) == 2


#: nbgrader is the grading extra's (the dev extra has it, so CI runs these); a GPU machine's
#: kit may lack it, and grading runs nothing on the GPU.
needs_nbgrader = pytest.mark.skipif(
    importlib.util.find_spec("nbgrader") is None,
    reason="nbgrader is not installed: pip install -e '.[grading]' (the dev extra has it)")


def nbgrader(*args: str, cwd: Path, exchange: Path) -> str:
    """nbgrader's command line, as a teacher or a learner runs it (its database migrations
    run `alembic` from PATH: this Python's scripts)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--Exchange.root={exchange}",
                           "--CourseDirectory.course_id=wd-teach"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def answer(folder: Path, code: str) -> None:
    """A learner's answer, typed into the released answer cell of their fetched copy."""
    path = folder / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, 4)
    cell = graded(nb)["heading_store-answer-1"]
    assert "# your push here" in cell.source and BEGIN not in cell.source  # the stub alone
    cell.source = code
    nbformat.write(nb, path)


@pytest.mark.slow
@needs_nbgrader
def test_a_wrong_and_a_right_answer_autograde_to_0_and_full(tmp_path, capsys):
    course, exchange = tmp_path / "course", tmp_path / "exchange"
    exchange.mkdir()
    assert wd_teach_cli(["course", str(course), "--lessons", LESSON]) == 0
    nbgrader("generate_assignment", LESSON, cwd=course, exchange=exchange)
    nbgrader("release_assignment", LESSON, cwd=course, exchange=exchange)
    for seat, code in (("ada", WRONG), ("bob", RIGHT)):
        folder = tmp_path / seat
        folder.mkdir()
        nbgrader("fetch_assignment", LESSON, cwd=folder, exchange=exchange)
        answer(folder, code)
        nbgrader("submit", LESSON, f"--CourseDirectory.student_id={seat}", cwd=folder,
                 exchange=exchange)
    nbgrader("collect", LESSON, cwd=course, exchange=exchange)
    nbgrader("autograde", LESSON, cwd=course, exchange=exchange)
    capsys.readouterr()
    assert wd_teach_cli(["grades", "--course", str(course)]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()}
    assert rows["seat"] == ["01", "heading_store", "total"]
    assert rows["ada"] == ["0/1", "0/1"] and rows["bob"] == ["1/1", "1/1"]
    graded_wrong = nbformat.read(course / "autograded" / "ada" / LESSON / f"{LESSON}.ipynb", 4)
    said = "".join(o.get("text", "") for o in graded(graded_wrong)["heading_store-test"].outputs)
    assert "no pristine copy" in said  # the lesson's checker said why, to the learner too


@pytest.mark.slow
@needs_nbgrader
def test_every_assignment_generates_a_release_without_its_solutions(tmp_path, monkeypatch):
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    course = tmp_path / "course"
    make_course(course)
    monkeypatch.chdir(course)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.Exchange.root = str(tmp_path / "exchange")
    api = NbGraderAPI(config=config)
    for source in sorted((course / "source").iterdir()):
        made = api.generate_assignment(source.name)
        assert made["success"], made.get("error")
        release = nbformat.read(course / "release" / source.name / f"{source.name}.ipynb", 4)
        for cell in graded(release).values():
            assert BEGIN not in cell.source and "NotImplementedError" not in cell.source
