"""On a GPU the catch exercise of 06_tag runs in both languages, and the race is real: a
plain += loses counts that an atomic add keeps."""

import numpy as np
import pytest
from exercise_answers import (
    CATCH_C,
    CATCH_C_EXCHANGE_ON_IN_GAME,
    exchange_on_in_game,
    make_catch,
    plain_count,
)

import wd_teach
from wd_teach.exercises import lesson_06
from wd_teach.exercises.races import races

right_catch = make_catch()


def test_a_right_catch_runs_in_both_languages_and_passes(capsys):
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"
    verdict = lesson_06.check_catch(right_catch, CATCH_C, "pycuda")
    assert verdict and verdict.passed_here
    out = capsys.readouterr().out
    assert "CUDA C kernel: ran on pycuda" in out
    assert "Numba kernel: ran on numba (on the GPU)" in out
    assert "All right" in out and "NOT" not in out


@pytest.mark.parametrize("wrong, says", [
    (("atomicAdd(&num_caught[env], 1);", "num_caught[env] += 1;"), "adds were lost"),
    (("agent < num_taggers) return;", "agent < 0) return;"), "is a tagger"),
    (("if (in_game[me] == 0) return;", ""), "already out of the game"),
    (("<= tagging_distance", "< tagging_distance"), "exactly at it"),
    (("atomicAdd(&num_caught[env], 1);", "num_caught[env] = 1;"), "do not overwrite it"),
])
def test_wrong_cuda_c_catches_are_rejected_naming_what_is_wrong(wrong, says, capsys):
    old, new = wrong
    assert old in CATCH_C
    assert not lesson_06.check_catch(right_catch, CATCH_C.replace(old, new), "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel, " in out and says in out and "All right" not in out


def test_a_numba_catch_with_a_plain_add_loses_counts_on_the_gpu(capsys):
    assert not lesson_06.check_catch(plain_count, CATCH_C, "numba")
    out = capsys.readouterr().out
    assert "Numba kernel, " in out and "adds were lost" in out


def test_an_atomic_on_in_game_beside_a_plain_count_is_rejected_in_both_languages(capsys):
    """The known-wrong catch: an exchange on in_game, a plain += on num_caught. The crowd
    loses counts; where a run by chance loses none, the Numba kernel's IR still shows it."""
    assert not lesson_06.check_catch(exchange_on_in_game, CATCH_C, "numba")
    out = capsys.readouterr().out
    assert "adds were lost" in out or "its atomics go elsewhere (exch on in_game)" in out
    verdict = lesson_06.check_catch(right_catch, CATCH_C_EXCHANGE_ON_IN_GAME, "pycuda")
    assert not verdict
    out = capsys.readouterr().out
    assert "CUDA C kernel, " in out and "adds were lost" in out and "All right" not in out


@pytest.mark.parametrize("backend", ["pycuda", "numba"])
def test_a_plain_add_loses_updates_on_a_gpu_and_an_atomic_none(backend):
    lost = races.lost_updates(backend, [1, 32, 256], num_envs=500)
    assert np.array_equal(lost["count_atomic"], np.zeros(3))
    assert lost["count_plain"][0] == 0  # one thread alone cannot race
    assert lost["count_plain"][1] > 0.5  # a warp's threads read the same old value
