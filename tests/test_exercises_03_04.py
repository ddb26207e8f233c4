"""The checker of 03_sampler says yes to right answers and no, with a hint, to wrong ones.
(04_reset_and_log's reset exercise is tested in tests/test_exercise_reset.py.)"""

import numpy as np
import pytest
from exercise_answers import (
    DRAW_CU,
    cuda_c_runs_on_the_cpu,
    draw_from_float_zero,
    make_draw_kernel,
    right_where_it_ran,
    says_the_cuda_c_did_not_run_on_a_gpu,
)
from numba import cuda

import wd_teach
from wd_teach.device import nvcc_path
from wd_teach.exercises import lesson_03
from wd_teach.exercises.gpu_types import float64_variables
from wd_teach.numba_index import agent_id, env_id
from wd_teach.sampler.reference import inverse_cdf

# -- lesson 03: the draw loop, as a kernel in both languages ---------------------------------


def test_the_traps_fit_the_store_and_stay_traps():
    """Each trap catches what it says: a float64 running sum draws another action on the
    float32 trap, and the last action past the end of the probability-0 trap is impossible."""
    assert all(len(trap.row) == lesson_03.NUM_ACTIONS for trap in lesson_03.TRAPS)
    assert len(lesson_03.TRAPS) < lesson_03.NUM_AGENTS
    for trap in lesson_03.TRAPS:
        row = np.array(trap.row, np.float32)
        u = np.float32(trap.u)
        want = int(inverse_cdf(row, np.asarray(u)))
        float64_sums = np.cumsum(row.astype(np.float64))
        float64_draw = int(np.argmax(float(u) < float64_sums)) if (u < float64_sums).any() \
            else want
        assert row[want] > 0
        if "float32" in trap.about:
            assert float64_draw != want
        if "probability-0" in trap.about:
            assert np.cumsum(row, dtype=np.float32)[-1] <= u and row[-1] == 0


def test_draw_checker_accepts_the_right_kernels(backend, capsys):
    assert right_where_it_ran(lesson_03.check_draw_kernels(make_draw_kernel(), DRAW_CU, backend))
    out = capsys.readouterr().out
    if "pycuda" in wd_teach.discover().backends:
        assert "All right" in out
    else:  # the CUDA C half did not run on a GPU: the checker must not call the whole right
        assert "All right" not in out
        assert says_the_cuda_c_did_not_run_on_a_gpu(out), out


@pytest.mark.parametrize("kernel, hint", [
    (make_draw_kernel(total=np.float64, last_fallback=True), "agent 5 (a float32 running sum)"),
    (make_draw_kernel(total=np.float64), "never double"),
    (make_draw_kernel(at_or_below=True), "use u < sum, not u <= sum"),
    (make_draw_kernel(last_fallback=True), "action 4 has p = 0"),
    (make_draw_kernel(write=False), "nothing was written to this agent's action"),
    (make_draw_kernel(env_of_row=0), "(a random row, the sampler's own u)"),
])
def test_draw_checker_rejects_wrong_numba_kernels_naming_the_agent(kernel, hint, backend,
                                                                   capsys):
    assert not lesson_03.check_draw_kernels(kernel, DRAW_CU, backend)
    out = capsys.readouterr().out
    assert hint in out and "The first is env" in out
    assert "All right" not in out


@cuda.jit
def draw_with_other_names(p, uniform, actions, num_actions, num_agents):
    pass


def test_draw_checker_names_the_parameters(backend, capsys):
    assert not lesson_03.check_draw_kernels(draw_with_other_names, DRAW_CU, backend)
    assert "the parameters are probs, u, actions, num_actions, num_agents" in \
        capsys.readouterr().out


NO_GPU_PATH = pytest.mark.skipif("pycuda" in wd_teach.discover().backends,
                                 reason="checks the no-GPU path (read and compile only); with "
                                        "PyCUDA here the checker runs the CUDA C instead")


@NO_GPU_PATH
@pytest.mark.parametrize("source, hint", [
    (DRAW_CU.replace("float cumulative = 0.0f", "double cumulative = 0.0"), "adds in double"),
    (DRAW_CU[:DRAW_CU.index("{\n  const int env")] + "{\n  // your code\n}\n",
     "the body of draw_actions is empty"),
    (DRAW_CU.replace("const float* u,", "const float* uniform,").replace("u[slot]",
                                                                         "uniform[slot]"),
     "needs 'uniform'"),
    (DRAW_CU.replace("draw_actions(", "sample("), "named draw_actions"),
])
def test_draw_checker_rejects_cuda_c_it_can_read_without_a_gpu(source, hint, capsys):
    assert not lesson_03.check_draw_kernels(make_draw_kernel(), source, "numba")
    assert hint in capsys.readouterr().out


@NO_GPU_PATH
def test_wrong_cuda_c_arithmetic_without_a_gpu_is_never_called_right(capsys):
    """PyCUDA cannot run here: a wrong body compiles and is never called right. Where no GPU
    is, it runs on the CPU (wd_teach/exercises/host_c.py) and is found wrong by its draws, so
    the solution cell's assert on a CPU (`passed_here`) fails on it too."""
    source = DRAW_CU.replace("u[slot] < cumulative", "u[slot] <= cumulative")
    verdict = lesson_03.check_draw_kernels(make_draw_kernel(), source, "numba")
    out = capsys.readouterr().out
    assert not verdict and "All right" not in out
    if not cuda_c_runs_on_the_cpu():
        assert "Checked only in part" in out
        assert "NOT checked: what the CUDA C kernel computes" in out
    else:
        assert not verdict.passed_here and "CUDA C kernel, run on the CPU" in out, out


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not on this machine")
@NO_GPU_PATH
def test_draw_checker_shows_nvccs_error(capsys):
    source = DRAW_CU.replace("cumulative += row[a];", "cumulative += x;")
    assert not lesson_03.check_draw_kernels(make_draw_kernel(), source, "numba")
    assert 'identifier "x" is undefined' in capsys.readouterr().out


@pytest.mark.gpu
@pytest.mark.parametrize("source, hint", [
    (DRAW_CU.replace("u[slot] < cumulative", "u[slot] <= cumulative"), "use u < sum, not u <= sum"),
    (DRAW_CU.replace("float cumulative = 0.0f", "double cumulative = 0.0"),
     "agent 5 (a float32 running sum)"),
    (DRAW_CU.replace("actions[slot] = action < 0 ? last_possible : action;",
                     "actions[slot] = action < 0 ? num_actions - 1 : action;"),
     "action 4 has p = 0"),
])
def test_wrong_cuda_c_is_caught_by_its_run_on_a_gpu(source, hint, capsys):
    if "pycuda" not in wd_teach.discover().backends:
        pytest.skip("running CUDA C needs PyCUDA, and it is not installed here")
    assert not lesson_03.check_draw_kernels(make_draw_kernel(), source, "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel" in out and hint in out and "All right" not in out


@cuda.jit
def draw_from_a_bare_float(probs, u, actions, num_actions, num_agents):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    row = probs[env, agent]
    cumulative = 0.0  # a float64 on a GPU (float32 on the simulator, by NumPy's rules)
    last_possible = 0
    action = -1
    for a in range(num_actions):
        if action < 0:
            if row[a] > 0:
                last_possible = a
            cumulative += row[a]
            if u[env, agent] < cumulative:
                action = a
    actions[env, agent] = action if action >= 0 else last_possible


def test_the_gpu_types_of_a_kernels_variables_show_a_float64_sum():
    """The simulator keeps a sum started at 0.0 or float(0) float32 (NumPy's rules); Numba's
    compiler for a GPU makes it float64. The checker compiles the kernel for a GPU (no GPU
    needed) and reads the types."""
    found = float64_variables(draw_from_a_bare_float, lesson_03.ARG_TYPES)
    if isinstance(found, str) and "nvvm" in found.lower():
        pytest.skip(f"Numba's compiler for a GPU (NVVM) is not here: {found}")
    assert found == ["cumulative"]
    assert float64_variables(draw_from_float_zero, lesson_03.ARG_TYPES) == ["cumulative"]
    assert float64_variables(make_draw_kernel(), lesson_03.ARG_TYPES) == []


@pytest.mark.parametrize("kernel", [draw_from_a_bare_float, draw_from_float_zero],
                         ids=["0.0", "float(0)"])
def test_a_running_sum_that_a_gpu_makes_float64_is_refused(kernel, capsys):
    """On the simulator every draw is right, and the types a GPU gives the sum are what
    refuses it; on a GPU the float64 sum already draws wrong actions (measured on an H100:
    3 of 120 agents), which refuses it first."""
    verdict = lesson_03.check_draw_kernels(kernel, DRAW_CU, "numba")
    out = capsys.readouterr().out
    assert not verdict and not verdict.passed_here
    if wd_teach.gpu_available():
        assert "drew the wrong action" in out or "cumulative is a float64" in out
    else:
        assert "cumulative is a float64" in out and "np.float32(0.0)" in out


def test_draw_checker_waits_for_both_halves(capsys):
    assert not lesson_03.check_draw_kernels(make_draw_kernel(), None)
    assert "Not yet" in capsys.readouterr().out


def test_without_numbas_gpu_compiler_the_sums_type_is_said_to_be_unchecked(monkeypatch,
                                                                           capsys):
    """A laptop without NVVM runs the draws but cannot type the kernel for a GPU: the verdict
    is not True and says so; what ran is right."""
    monkeypatch.setattr(lesson_03, "float64_variables",
                        lambda kernel, types: "NvvmSupportError: libNVVM cannot be found")
    verdict = lesson_03.check_draw_kernels(make_draw_kernel(), DRAW_CU, "numba")
    out = capsys.readouterr().out
    assert not verdict and verdict.passed_here
    assert "NOT checked whether its running sum is float32" in out and "All right" not in out
