#!/usr/bin/env bash
# A room's grading from start to end, as the seats of the workshop image do it, with the
# image's nbgrader settings (docker/nbgrader_config.py: the course, the exchange folder, and
# each seat's role, which the hub gives as WD_TEACH_ROOM_ROLE and JUPYTERHUB_USER):
#
#   the teacher makes the course from the lessons, generates and releases lesson 01;
#   ada fetches it and answers wrong, bob answers right (tests/test_room_grading.py's
#   answers), both submit under their hub names; the teacher collects, autogrades, and
#   prints the table of seats by exercise.
#
#   bash tests/container/grade_in_room.sh FOLDER     # FOLDER: an empty scratch folder
#
# tests/container/test_grading.py runs it inside the image, where every seat is the same
# user (`learner`) and the exchange is /srv/nbgrader/exchange.
set -euo pipefail
room="${1:?usage: grade_in_room.sh FOLDER}"
tests="$(cd "$(dirname "$0")/.." && pwd)"
lesson=01_data_push
export WD_TEACH_WORK="$room/teacher"

as() {  # as ROLE NAME COMMAND...: a command in the seat of NAME, whose role is ROLE
  local role="$1" name="$2"
  shift 2
  WD_TEACH_ROOM_ROLE="$role" JUPYTERHUB_USER="$name" "$@"
}

mkdir -p "$WD_TEACH_WORK"
as teacher teacher wd-teach course "$WD_TEACH_WORK/course" --lessons "$lesson"
cd "$WD_TEACH_WORK/course"
as teacher teacher nbgrader generate_assignment "$lesson"
as teacher teacher nbgrader release_assignment "$lesson"
for seat in ada:WRONG bob:RIGHT; do
  name="${seat%%:*}" answer="${seat##*:}"
  mkdir -p "$room/$name"
  cd "$room/$name"
  as learner "$name" nbgrader fetch_assignment "$lesson"
  python -c "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path
import test_room_grading as t; t.answer(Path('.'), t.$answer)" "$tests"
  as learner "$name" nbgrader submit "$lesson"
done
cd "$WD_TEACH_WORK/course"
as teacher teacher nbgrader collect "$lesson"
as teacher teacher nbgrader autograde "$lesson"
echo "=== grades"
as teacher teacher wd-teach grades
