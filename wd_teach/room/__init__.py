"""What a teacher running a room uses: the lessons' exercises as graded nbgrader assignments.

    assignments.py   notebooks/ -> an nbgrader course's source/ (one assignment a lesson),
                     whose test cells call the same checkers the learners run
    grades.py        the gradebook as a table of seats by exercise (`wd-teach grades`)

The per-seat GPU memory limit a room sets is lower down, in wd_teach/seat_memory.py: every
layer that makes GPU memory honours it.
"""
