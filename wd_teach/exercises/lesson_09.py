"""Checker for 09_scaling_up: how many environments fit, from two measurements.

The learner writes `envs_that_fit(points, free_bytes, fraction)`: `points` are two
(envs, peak bytes) measurements of a training run, in any order. Memory is taken to be a
line through them, bytes = a + b * envs, and the answer is the largest whole number of
envs with a + b * envs <= fraction * free_bytes (0 when not even one fits). The checker
works each answer out itself in exact arithmetic (fractions, no rounding) and compares on
the cases that trip people: a fixed part that one point alone would miss, an answer that
rounding would push past the budget, a size exactly at the budget, and a budget that holds
no env at all.
"""

from __future__ import annotations

import math
from fractions import Fraction

from wd_teach.exercises.verdict import verdict_of

MIB = 2**20
GIB = 2**30


def reference_envs(points, free_bytes, fraction) -> int:
    """The answer by the definition, in exact fractions."""
    (n1, m1), (n2, m2) = sorted(points)
    slope = Fraction(m2 - m1) / (n2 - n1)
    base = m1 - slope * n1
    budget = Fraction(fraction) * free_bytes
    return max(math.floor((budget - base) / slope), 0)


def cases():
    """(what the case tries, points, free bytes, fraction)."""
    yield "two runs", [(8, 1_200 * MIB), (32, 1_400 * MIB)], 80 * GIB, 0.8
    yield "the larger run first, half the free memory", \
        [(64, 2_300 * MIB), (16, 1_000 * MIB)], 40 * GIB, 0.5
    yield "an answer that rounding would push past the budget", \
        [(10, 1_000), (20, 1_300)], 10_000, 0.9
    yield "a size exactly at the budget (it fits)", [(10, 200), (20, 300)], 10_000, 0.5
    yield "a budget that holds no env at all", [(8, 3 * GIB), (32, 4 * GIB)], 2 * GIB, 0.8


@verdict_of("envs_that_fit()")
def check_envs_that_fit(envs_that_fit) -> bool:
    if envs_that_fit is None or not callable(envs_that_fit):
        print("Not yet: write envs_that_fit(points, free_bytes, fraction) and pass the "
              "function.")
        return False
    for what, points, free, fraction in cases():
        want = reference_envs(points, free, fraction)
        try:
            got = envs_that_fit(list(points), free, fraction)
        except Exception as err:  # the learner's code may fail in any way; say how
            print(f"Case '{what}': envs_that_fit() raised {type(err).__name__}: {err}")
            return False
        if got is None:
            print("Not yet: envs_that_fit() returns None; return a whole number of envs.")
            return False
        if not _whole(got):
            print(f"Case '{what}': got {got!r}; a number of envs is a whole number (round "
                  "down: a part of an env does not run).")
            return False
        if int(got) != want:
            print(f"Case '{what}': points {points}, {free:,} bytes free, fraction {fraction}: "
                  f"got {int(got)}, want {want}.")
            print(f"Hint: {_hint(what)}")
            return False
    print("All right: your envs_that_fit gives the most envs within the budget in every case.")
    return True


def _whole(value) -> bool:
    try:
        return float(value) == int(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _hint(what: str) -> str:
    if "half" in what:
        return "the budget is fraction * free_bytes, not free_bytes."
    if "rounding" in what:
        return "round down (math.floor), not to the nearest: one env more is over the budget."
    if "exactly" in what:
        return "a size whose memory equals the budget fits: the test is <=, not <."
    if "no env" in what:
        return "when the fixed part a alone is over the budget, the answer is 0, not a " \
               "negative number."
    return ("take b = (bytes2 - bytes1) / (envs2 - envs1) and a = bytes1 - b * envs1 (memory "
            "has a fixed part a: it is not bytes per env times envs), then the largest envs "
            "with a + b * envs <= fraction * free_bytes (the budget is only that fraction).")
