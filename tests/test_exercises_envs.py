"""The checkers of lessons 05 (a custom env's step) and 06 (Tag's catch rule) say yes to a
right answer and no, with a hint, to wrong ones."""

import numpy as np
import pytest
from exercise_answers import (
    PARKING_CU,
    cuda_c_runs_on_the_cpu,
    make_parking_step,
    says_the_cuda_c_did_not_run_on_a_gpu,
)

import wd_teach
from wd_teach.device import nvcc_path
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.exercises import lesson_05, lesson_06

# -- lesson 05: the parking line ---------------------------------------------------------------


def test_parking_line_parks_within_the_checkers_steps():
    """The checker's run is only as good as what happens in it: particles park."""
    sizes = wd_teach.lesson_sizes()
    env = lesson_05.ParkingLine(num_particles=sizes.num_agents,
                                episode_length=max(4, sizes.episode_length), length=5.0)
    wrapper = EnvWrapper(env, sizes.num_envs, "numpy", auto_reset=False)
    for _ in range(env.episode_length):
        wrapper.step(wrapper.random_actions())
    assert wrapper.store.pull("parked").any()


def test_parking_step_accepts_the_right_kernels(backend, capsys):
    verdict = lesson_05.check_parking_step(make_parking_step(), PARKING_CU, backend)
    assert verdict.passed_here
    assert bool(verdict) == ("pycuda" in wd_teach.discover().backends)
    out = capsys.readouterr().out
    if "pycuda" in wd_teach.discover().backends:
        assert "All right" in out
    else:  # the CUDA C half did not run on a GPU: the checker must not call the whole right
        assert "All right" not in out
        assert says_the_cuda_c_did_not_run_on_a_gpu(out), out


@pytest.mark.skipif("pycuda" in wd_teach.discover().backends,
                    reason="checks the no-GPU path (read and compile only); with PyCUDA here "
                           "the checker runs the CUDA C instead")
@pytest.mark.parametrize("source, said", [
    (PARKING_CU[:PARKING_CU.index("{\n  const int env")] + "{\n  // your code\n}\n",
     "the body of parking_step is empty"),
    (PARKING_CU.replace("reward = reward + arrival_bonus;", ""),
     "Not yet" if cuda_c_runs_on_the_cpu() else "Checked only in part"),
])
def test_parking_step_without_a_gpu_never_calls_unrun_cuda_c_right(source, said, capsys):
    """Without PyCUDA a wrong body is never called right; where no GPU is, it runs on the
    CPU (wd_teach/exercises/host_c.py) and the missing bonus is found wrong by its rewards."""
    verdict = lesson_05.check_parking_step(make_parking_step(), source, "numba")
    out = capsys.readouterr().out
    assert said in out and "All right" not in out
    assert not verdict.passed_here if cuda_c_runs_on_the_cpu() else not verdict


@pytest.mark.parametrize("kernel, hint", [
    (make_parking_step(bonus=False), "plus arrival_bonus in the step it parks"),
    (make_parking_step(park_stays=False), "a parked one stays where it is"),
    (make_parking_step(parked_feature=False), "[pos / length, (goal - pos) / length, parked]"),
    (make_parking_step(guard=False), "if agent >= num_agents, return"),
])
def test_parking_step_rejects_a_wrong_numba_kernel(kernel, hint, backend, capsys):
    assert not lesson_05.check_parking_step(kernel, PARKING_CU, backend)
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize("source, hint", [
    (PARKING_CU.replace("float* pos,", "float* position,"), "needs 'position'"),
    (PARKING_CU.replace("int* parked", "float* parked"), "holds int32"),
    (PARKING_CU.replace("parking_step(", "park("), "named parking_step"),
])
def test_parking_step_rejects_cuda_c_that_does_not_bind(source, hint, capsys):
    if "pycuda" in wd_teach.discover().backends:
        pytest.skip("checks the no-GPU path (bind and compile only); with PyCUDA here the "
                    "checker runs the CUDA C instead")
    assert not lesson_05.check_parking_step(make_parking_step(), source, "numba")
    assert hint in capsys.readouterr().out


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not on this machine")
def test_parking_step_rejects_cuda_c_that_does_not_compile(capsys):
    if "pycuda" in wd_teach.discover().backends:
        pytest.skip("checks the no-GPU path (compile only); with PyCUDA here the checker "
                    "runs the CUDA C instead")
    source = PARKING_CU.replace("fabsf(goal[env] - pos[i])", "fabsf(goal[env] - x)")
    assert not lesson_05.check_parking_step(make_parking_step(), source, "numba")
    assert 'identifier "x" is undefined' in capsys.readouterr().out


@pytest.mark.gpu
def test_parking_step_catches_wrong_cuda_c_by_its_run_on_a_gpu(capsys):
    if "pycuda" not in wd_teach.discover().backends:
        pytest.skip("running CUDA C needs PyCUDA, and it is not installed here")
    source = PARKING_CU.replace("reward = reward + arrival_bonus;", "")
    assert not lesson_05.check_parking_step(make_parking_step(), source, "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel" in out and "first divergence" in out and "All right" not in out


def test_parking_step_waits_for_both_halves(capsys):
    assert not lesson_05.check_parking_step(None, PARKING_CU)
    assert "Not yet" in capsys.readouterr().out


# -- lesson 06: the catch rule -------------------------------------------------------------------


def right_caught(loc_x, loc_y, in_game, num_taggers, tagging_distance):
    dx = loc_x[:, num_taggers:, None] - loc_x[:, None, :num_taggers]
    dy = loc_y[:, num_taggers:, None] - loc_y[:, None, :num_taggers]
    close = (dx * dx + dy * dy <= tagging_distance**2).any(axis=2)
    return close & (in_game[:, num_taggers:] != 0)


def test_caught_accepts_the_right_rule(capsys):
    assert lesson_06.check_caught(right_caught)
    assert "All right" in capsys.readouterr().out


def strictly_within(loc_x, loc_y, in_game, num_taggers, tagging_distance):
    dx = loc_x[:, num_taggers:, None] - loc_x[:, None, :num_taggers]
    dy = loc_y[:, num_taggers:, None] - loc_y[:, None, :num_taggers]
    return (dx * dx + dy * dy < tagging_distance**2).any(axis=2) & (in_game[:, num_taggers:] != 0)


def everyone_plays(loc_x, loc_y, in_game, num_taggers, tagging_distance):
    return right_caught(loc_x, loc_y, np.ones_like(in_game), num_taggers, tagging_distance)


def taggers_as_runners(loc_x, loc_y, in_game, num_taggers, tagging_distance):
    return right_caught(loc_x, loc_y, in_game, num_taggers, tagging_distance)[:, 1:]


@pytest.mark.parametrize("caught, hint", [
    (strictly_within, "includes exactly at it"),
    (everyone_plays, "cannot be caught again"),
    (taggers_as_runners, "one value per environment and runner"),
    (lambda *args: None, "Not yet"),
    (None, "Not yet"),
    (lambda *args: 1 / 0, "ZeroDivisionError"),
])
def test_caught_rejects_a_wrong_rule_with_a_hint(caught, hint, capsys):
    assert not lesson_06.check_caught(caught)
    assert hint in capsys.readouterr().out
