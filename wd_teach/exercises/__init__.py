"""Checkers for the notebooks' exercises, one module per lesson (lesson_01.py, ...).

A checker takes what the learner built, compares it with an answer it computes itself,
prints a short verdict and returns True or False, so a notebook cell can both teach and
assert. No checker stores its answer: each one works it out from the learner's inputs.
"""
