"""The checker of lesson 09 (how many envs fit) says yes to a right answer and no, with the
case and a hint, to the usual wrong ones; its own answers come from exact arithmetic."""

import math

import pytest

from wd_teach.exercises.lesson_09 import cases, check_envs_that_fit, reference_envs
from wd_teach.scale.autoscale import envs_within


def right(points, free_bytes, fraction):
    (n1, m1), (n2, m2) = sorted(points)
    b = (m2 - m1) / (n2 - n1)
    return max(math.floor((fraction * free_bytes - (m1 - b * n1)) / b), 0)


def rounded(points, free_bytes, fraction):
    (n1, m1), (n2, m2) = sorted(points)
    b = (m2 - m1) / (n2 - n1)
    return max(round((fraction * free_bytes - (m1 - b * n1)) / b), 0)


def per_env(points, free_bytes, fraction):
    envs, peak = max(points)
    return int(fraction * free_bytes // (peak / envs))


def whole_memory(points, free_bytes, fraction):
    return right(points, free_bytes, 1.0)


def strictly_below(points, free_bytes, fraction):
    found = right(points, free_bytes, fraction)
    (n1, m1), (n2, m2) = sorted(points)
    b = (m2 - m1) / (n2 - n1)
    return found - 1 if m1 + b * (found - n1) == fraction * free_bytes else found


def negative(points, free_bytes, fraction):
    (n1, m1), (n2, m2) = sorted(points)
    b = (m2 - m1) / (n2 - n1)
    return math.floor((fraction * free_bytes - (m1 - b * n1)) / b)


def test_a_right_answer_passes(capsys):
    assert check_envs_that_fit(right)
    assert "All right" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (rounded, "round down"),
    (per_env, "fixed part"),
    (whole_memory, "fraction"),
    (strictly_below, "<="),
    (negative, "not a negative number"),
    (lambda *a: 2.5, "whole number"),
    (lambda *a: None, "returns None"),
    (lambda *a: 1 / 0, "ZeroDivisionError"),
    (None, "Not yet"),
])
def test_wrong_answers_are_caught_with_a_hint(wrong, hint, capsys):
    assert not check_envs_that_fit(wrong)
    assert hint in capsys.readouterr().out


def test_the_checkers_answers_agree_with_the_auto_scaler():
    for _, points, free, fraction in cases():
        (n1, m1), (n2, m2) = sorted(points)
        b = (m2 - m1) / (n2 - n1)
        assert envs_within(m1 - b * n1, b, fraction * free) == reference_envs(points, free,
                                                                               fraction)
