"""The lessons' exercises as nbgrader assignments, made from notebooks/, the one source.

A lesson's exercise is a section of its notebook: a heading "## Exercise ...", the cells a
learner fills in (stubs that end by calling the lesson's checker), and a folded solution
(cells that end by asserting the checker's verdict). nbgrader, the Jupyter tool for graded
notebooks, wants the same thing marked in its own way: an answer cell (the solution between
`### BEGIN SOLUTION` and `### END SOLUTION`, which the released copy leaves out) and a
locked test cell worth points. So an assignment is the whole lesson, with each exercise
section turned into

    answer cell(s)   the stub, then the solution between nbgrader's markers: a learner
                     receives the stub alone, the teacher's copy runs the solution
    test cell        the solution's own last lines: the same checker the learner runs,
                     and an assert on its verdict, worth POINTS. Where the lesson lets a
                     machine without PyCUDA pass on the half it could run, the grade does
                     not: a two-language exercise scores only where its CUDA C ran too

so there is one checker with two uses, and an assignment cannot drift from its lesson: it
is made again from the notebook whenever the notebook changes (`wd-teach course DIR`).
Everything else in the lesson (the set-up cell, the steps an exercise builds on) stays as
it is, so the checker finds what it needs, as in the lesson.

    make_course("course")        # course/nbgrader_config.py, course/source/01_data_push/...
    nbgrader generate_assignment 01_data_push     # in course/: the release copy
"""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from wd_teach.errors import WdTeachError

#: Points a learner gets for an exercise whose checker says all right.
POINTS = 1
#: The course's name in nbgrader's exchange, unless the teacher chooses another.
COURSE_ID = "wd-teach"
#: The folder of the lessons, in a clone of the repository and in the workshop image.
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
#: A two-language solution cell lets a machine without PyCUDA pass on what it could run
#: (`verdict.passed_here`, with the comment above it). A grade does not: there the exercise
#: scores only where every language ran here and was right.
PASSED_HERE = re.compile(r"^(# True only where both halves ran.*\n)?"
                         r"assert verdict if .+ else verdict\.passed_here$", re.MULTILINE)
STRICT = ("# Graded: every language must run here and be right. CUDA C runs only through\n"
          "# PyCUDA on a GPU: where it could not, the verdict says so and this scores 0.\n"
          "assert verdict, verdict")

COURSE_CONFIG = '''"""nbgrader's settings for the wd-teach course (written by `wd-teach course`).

An answer cell of an assignment is the lesson's stub, then its solution between nbgrader's
markers: the released copy keeps the stub and nothing in place of the solution (nbgrader's
default would put a `raise NotImplementedError()` there). A lesson's cells train and measure
at the machine's size: they may take minutes each when graded.
"""

c = get_config()  # noqa: F821  (nbgrader's config loader provides get_config)
c.CourseDirectory.course_id = {course_id!r}
c.ClearSolutions.code_stub = {{"python": ""}}
c.Execute.timeout = 900
'''


class CourseError(WdTeachError, ValueError):
    """A lesson or a course folder that cannot be made into nbgrader assignments."""


@dataclass(frozen=True)
class Exercise:
    """One exercise section of a notebook, by cell index: the stubs a learner fills in, the
    folded solution cells (one for each stub, in the same order), and the cells that go
    when the section becomes answer and test cells (the solution and its captions)."""

    heading: int
    stubs: tuple[int, ...]
    solutions: tuple[int, ...]
    dropped: tuple[int, ...]
    checker: str


def find_exercises(nb, name: str = "the notebook") -> list[Exercise]:
    """Every "## Exercise" section of `nb` that ends in a folded solution, in order."""
    exercises = []
    cells = nb.cells
    for start, cell in enumerate(cells):
        if cell.cell_type != "markdown" or not cell.source.startswith("## Exercise"):
            continue
        end = next((i for i in range(start + 1, len(cells)) if cells[i].cell_type == "markdown"
                    and cells[i].source.startswith("## ")), len(cells))
        section = range(start + 1, end)
        solutions = tuple(i for i in section if _folded(cells[i]))
        if not solutions:
            continue
        stubs = tuple(i for i in section if cells[i].cell_type == "code" and i < solutions[0])
        if len(stubs) != len(solutions):
            raise CourseError(f"{name}: the exercise at cell {start} has {len(stubs)} cell(s) "
                              f"to fill in but {len(solutions)} folded solution cell(s); an "
                              "assignment pairs them one to one. Give each stub its solution.")
        _, trailer = split_trailer(cells[solutions[-1]].source, f"{name}, cell {solutions[-1]}")
        dropped = tuple(i for i in range(stubs[-1] + 1, solutions[-1] + 1))
        exercises.append(Exercise(start, stubs, solutions, dropped, _checker_in(trailer)))
    return exercises


def split_trailer(source: str, where: str) -> tuple[str, str]:
    """(the code, the check): a cell's source cut before its first statement that calls a
    checker (a function named check_...), which runs to the end of the cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise CourseError(f"{where}: not Python ({err.msg}, line {err.lineno}).") from err
    for statement in tree.body:
        if _checker_in_node(statement):
            lines = source.splitlines()
            return ("\n".join(lines[: statement.lineno - 1]).rstrip(),
                    "\n".join(lines[statement.lineno - 1:]).strip())
    raise CourseError(f"{where}: no statement calls a checker (check_...), so there is "
                      "nothing to grade with. End the cell with the lesson's checker.")


def assignment_of(nb, lesson: str):
    """The nbgrader source notebook of a lesson: `nb` with each exercise section turned into
    answer cells and a test cell (the module says how). The lesson must have an exercise."""
    exercises = find_exercises(nb, lesson)
    if not exercises:
        raise CourseError(f"{lesson} has no exercise with a folded solution, so nothing to "
                          "grade. Lessons with one: " + ", ".join(lessons_with_exercises()))
    out = nbformat.from_dict(nb)
    out.cells = []
    by_start = {ex.stubs[0]: ex for ex in exercises}
    skip = {i for ex in exercises for i in (*ex.stubs, *ex.dropped)}
    for index, cell in enumerate(nb.cells):
        if index in by_start:
            out.cells.extend(_graded_cells(nb, by_start[index], lesson))
        elif index not in skip:
            out.cells.append(cell)
    return out


def _graded_cells(nb, exercise: Exercise, lesson: str) -> list:
    """The answer cells (stub, then solution between the markers) and the test cell."""
    part = exercise.checker.removeprefix("check_")
    cells = []
    for number, (stub, solution) in enumerate(zip(exercise.stubs, exercise.solutions, strict=True)):
        stub_code = _without_check(nb.cells[stub].source, f"{lesson}, cell {stub}")
        solution_code = _without_check(nb.cells[solution].source, f"{lesson}, cell {solution}")
        source = "\n".join(filter(None, [stub_code, BEGIN, solution_code, END]))
        cells.append(_nbgrader_cell(source, f"{part}-answer-{number + 1}", solution=True))
    _, trailer = split_trailer(nb.cells[exercise.solutions[-1]].source, lesson)
    cells.append(_nbgrader_cell(PASSED_HERE.sub(STRICT, trailer), f"{part}-test", grade=True))
    return cells


def _without_check(source: str, where: str) -> str:
    """A cell's code without its closing check (a stub may have none: the CUDA C source)."""
    try:
        return split_trailer(source, where)[0]
    except CourseError:
        return source.rstrip()


def _nbgrader_cell(source: str, grade_id: str, *, solution: bool = False,
                   grade: bool = False):
    marks = {"grade": grade, "grade_id": grade_id, "locked": grade, "schema_version": 3,
             "solution": solution, "task": False}
    if grade:
        marks["points"] = POINTS
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": marks})


def make_course(course: str | Path, lessons=None, *, notebooks: str | Path = NOTEBOOKS,
                course_id: str = COURSE_ID) -> list[Path]:
    """Write an nbgrader course folder: nbgrader_config.py (kept if there) and one source
    assignment per lesson (all lessons with an exercise, or the names in `lessons`), each
    made again from its notebook. Returns the assignment notebooks written."""
    notebooks = Path(notebooks)
    found = {p.stem: p for p in sorted(notebooks.glob("[0-9][0-9]_*.ipynb"))}
    if not found:
        raise CourseError(f"no lessons (NN_name.ipynb) in {notebooks}: pass the notebooks "
                          "folder of a wd-teach clone or image.")
    chosen = list(lessons) if lessons else [n for n in found if find_exercises(_read(found[n]))]
    unknown = [name for name in chosen if name not in found]
    if unknown:
        raise CourseError(f"no lesson {', '.join(map(repr, unknown))} in {notebooks}; the "
                          f"lessons are: {', '.join(found)}.")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", course_id):
        raise CourseError(f"course id {course_id!r}: use letters, digits, '.', '_' or '-'.")
    course = Path(course)
    if course.exists() and not course.is_dir():
        raise CourseError(f"{course} is a file; give a folder for the course (new or one "
                          "made by `wd-teach course` before).")
    course.mkdir(parents=True, exist_ok=True)
    config = course / "nbgrader_config.py"
    if not config.exists():
        config.write_text(COURSE_CONFIG.format(course_id=course_id), encoding="utf-8")
    return [_write_assignment(found[name], course / "source" / name) for name in chosen]


def _write_assignment(lesson: Path, folder: Path) -> Path:
    """One lesson's assignment folder: its notebook, and data/ when the lesson reads it."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / lesson.name
    nbformat.write(assignment_of(_read(lesson), lesson.stem), target)
    data = lesson.parent / "data"
    if data.is_dir() and "data/" in lesson.read_text(encoding="utf-8"):
        shutil.copytree(data, folder / "data", dirs_exist_ok=True)
    return target


def lessons_with_exercises(notebooks: str | Path = NOTEBOOKS) -> list[str]:
    """The lessons (notebook stems) that have an exercise to grade."""
    return [p.stem for p in sorted(Path(notebooks).glob("[0-9][0-9]_*.ipynb"))
            if find_exercises(_read(p), p.stem)]


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _folded(cell) -> bool:
    return cell.cell_type == "code" and bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


def _checker_in_node(node) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id.startswith("check_") for n in ast.walk(node))


def _checker_in(trailer: str) -> str:
    for node in ast.walk(ast.parse(trailer)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id.startswith("check_"):
            return node.func.id
    raise AssertionError("split_trailer found a checker")  # pragma: no cover
