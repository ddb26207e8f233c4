"""The gradebook as one table: a row per seat (nbgrader's student), a column per exercise.

nbgrader keeps every autograded score in the course's gradebook.db; its own views show one
assignment or one student at a time, and a teacher in a room wants the whole room at a
glance: who has solved which exercise. A column is an exercise's test cell (a lesson may
have several exercises), a cell of the table its score out of its points, `-` where the
seat has not submitted that lesson.

    wd-teach grades --course ~/work/course
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wd_teach.errors import MissingPieceError
from wd_teach.room.assignments import CourseError

NOT_SUBMITTED = "-"


@dataclass(frozen=True)
class Grades:
    """Seats by exercise: `columns` names each exercise ("01 heading_store"), `scores`
    maps a seat to one (score, points) per column, None where not submitted."""

    columns: tuple[str, ...]
    points: tuple[float, ...]
    scores: dict[str, tuple[float | None, ...]]

    def table(self) -> str:
        """The table as text: a header, a row per seat, its total at the end."""
        header = ("seat", *self.columns, "total")
        rows = [header]
        for seat, scores in sorted(self.scores.items()):
            cells = [NOT_SUBMITTED if s is None else f"{s:g}/{p:g}"
                     for s, p in zip(scores, self.points, strict=True)]
            total = sum(s for s in scores if s is not None)
            rows.append((seat, *cells, f"{total:g}/{sum(self.points):g}"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ("  ".join(text.ljust(w) for text, w in zip(row, widths, strict=True))
                 for row in rows)
        return "\n".join(line.rstrip() for line in lines)


def read_grades(course: str | Path = ".") -> Grades:
    """The scores in `course`/gradebook.db, as nbgrader's autograde left them."""
    try:
        from nbgrader.api import Gradebook, MissingEntry
    except ImportError as err:
        raise MissingPieceError("reading grades needs nbgrader: pip install 'wd-teach[grading]' "
                                "(the workshop image has it).") from err
    database = Path(course) / "gradebook.db"
    if not database.is_file():
        raise CourseError(f"no gradebook in {Path(course).resolve()}: give the course folder "
                          "(where nbgrader_config.py is) after `nbgrader autograde` ran there.")
    with Gradebook(f"sqlite:///{database}") as book:
        cells = [(a.name, nb.name, cell.name, cell.max_score)
                 for a in sorted(book.assignments, key=lambda a: a.name)
                 for nb in sorted(a.notebooks, key=lambda n: n.name)
                 for cell in sorted(nb.grade_cells, key=lambda c: c.name)]
        scores = {}
        for student in book.students:
            row = []
            for assignment, notebook, cell, _ in cells:
                try:
                    row.append(book.find_grade(cell, notebook, assignment, student.id).score)
                except MissingEntry:
                    row.append(None)
            scores[student.id] = tuple(row)
    columns = tuple(f"{a[:2]} {cell.removesuffix('-test')}" for a, _, cell, _ in cells)
    return Grades(columns, tuple(points for *_, points in cells), scores)
