"""Checkers for the notebooks' exercises, one module per lesson (lesson_01.py, ...).

A checker takes what the learner built, compares it with an answer it computes itself,
prints what it found and returns a Verdict (verdict.py), so a notebook cell can both teach
and assert: true only when every part it checks ran here and was right, and shown in words.
No checker stores its answer: each one works it out from the learner's inputs.
"""
