"""Graded exercises in the workshop image: nbgrader as the room's seats run it, through the
image's own settings (docker/nbgrader_config.py) and its exchange folder. The teacher makes
the course from the lessons, releases lesson 01; one learner answers wrong and one right;
autograding scores them 0 and full (tests/container/grade_in_room.sh does the steps;
tests/test_room_grading.py does the same on the CPU without the image)."""

import pytest

pytestmark = pytest.mark.container


def test_a_wrong_and_a_right_answer_autograde_to_0_and_full_in_the_image(container):
    done = container.run(["bash", "/opt/wd-teach/tests/container/grade_in_room.sh",
                          "/tmp/room"], timeout=1800)
    print(done.stdout[-3000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    table = done.stdout.split("=== grades\n", 1)[1].splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in table}
    assert rows["seat"] == ["01", "heading_store", "total"]
    assert rows["ada"] == ["0/1", "0/1"] and rows["bob"] == ["1/1", "1/1"]
    assert "cheating attempt" not in done.stdout + done.stderr  # seats share one user
