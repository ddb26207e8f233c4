"""On a GPU a kernel without its guard can give right numbers (its spare threads write the
next environment's first agent the value that agent's own thread writes, and the last
environment's past the array). The fenced launch of the move (02) and parking (05) checkers
catches it, in each language: the known-wrong answers that the simulator refuses by its index
check are refused here too, saying what was written past."""

import pytest
from exercise_answers import MOVE_C_WITHOUT_GUARD, PARKING_CU, make_parking_step
from numba import cuda

import wd_teach
from wd_teach.exercises import lesson_02, lesson_05
from wd_teach.lessons.demo import DEMO_CUDA_C
from wd_teach.lessons.demo import move as right_move
from wd_teach.numba_index import agent_id, env_id

PARKING_CU_WITHOUT_GUARD = PARKING_CU.replace("  if (agent >= num_agents) return;\n", "")


@cuda.jit
def move_without_guard(pos, vel, dt, num_agents):
    env = env_id()
    agent = agent_id()
    pos[env, agent] += vel[env, agent] * dt


def needs_pycuda():
    assert "pycuda" in wd_teach.discover().backends, "these tests need PyCUDA on the GPU"


@pytest.mark.parametrize("numba_kernel, cuda_c, backend", [
    (move_without_guard, DEMO_CUDA_C, "numba"),
    (right_move, MOVE_C_WITHOUT_GUARD, "pycuda"),
], ids=["numba", "cuda-c"])
def test_a_move_without_its_guard_is_refused_on_a_gpu(numba_kernel, cuda_c, backend, capsys):
    needs_pycuda()
    verdict = lesson_02.check_move_kernel(numba_kernel, cuda_c, backend)
    assert not verdict and not verdict.passed_here
    out = capsys.readouterr().out
    assert "wrote past the end of pos" in out and "All right" not in out


@pytest.mark.parametrize("numba_kernel, cuda_c, backend", [
    (make_parking_step(guard=False), PARKING_CU, "numba"),
    (make_parking_step(), PARKING_CU_WITHOUT_GUARD, "pycuda"),
], ids=["numba", "cuda-c"])
def test_a_parking_step_without_its_guard_is_refused_on_a_gpu(numba_kernel, cuda_c, backend,
                                                                capsys):
    needs_pycuda()
    assert PARKING_CU_WITHOUT_GUARD != PARKING_CU
    verdict = lesson_05.check_parking_step(numba_kernel, cuda_c, backend)
    assert not verdict and not verdict.passed_here
    out = capsys.readouterr().out
    assert "wrote past the end of" in out and "if agent >= num_agents, return" in out
    assert "All right" not in out


@pytest.mark.parametrize("backend", ["numba", "pycuda"])
def test_the_right_answers_leave_every_fence_whole(backend, capsys):
    needs_pycuda()
    assert lesson_02.check_move_kernel(right_move, DEMO_CUDA_C, backend)
    assert lesson_05.check_parking_step(make_parking_step(), PARKING_CU, backend)
    out = capsys.readouterr().out
    assert "last agent wrote past" not in out
    assert out.count("no thread wrote past the end") == 4
