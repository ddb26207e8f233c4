"""nbgrader's settings for every seat of the workshop image (installed as the venv's
etc/jupyter/nbgrader_config.py, so nbgrader's commands and its JupyterLab pages read it).

A seat of the room's JupyterHub (docker/jupyterhub/) gets WD_TEACH_ROOM_ROLE from the hub:
`teacher` for the hub's admins, `learner` for everyone else.

- Every seat uses the course WD_TEACH_COURSE (default wd-teach) and the exchange folder
  WD_TEACH_EXCHANGE (default /srv/nbgrader/exchange), a volume that every seat mounts.
- A teacher's course folder is `course/` in their work folder (`wd-teach course` makes it).
- A learner submits under their hub name: every seat runs as the same user, `learner`, so
  the user name alone would not tell the seats apart (nor the submissions' file owners,
  which a teacher's collect then does not check).
"""

import os

c = get_config()  # noqa: F821  (nbgrader's config loader provides get_config)

c.CourseDirectory.course_id = os.environ.get("WD_TEACH_COURSE", "wd-teach")
c.Exchange.root = os.environ.get("WD_TEACH_EXCHANGE", "/srv/nbgrader/exchange")
role = os.environ.get("WD_TEACH_ROOM_ROLE", "")
if role == "teacher":
    work = os.environ.get("WD_TEACH_WORK", os.path.expanduser("~/work"))
    c.CourseDirectory.root = os.path.join(work, "course")
    # Every seat is the same user, so a submission's file owner cannot name its learner:
    # nbgrader's check would call every submission a cheating attempt.
    c.CollectApp.check_owner = False
elif role == "learner" and os.environ.get("JUPYTERHUB_USER"):
    c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
