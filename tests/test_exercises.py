"""Each exercise checker says yes to a right answer and no, with a hint, to wrong ones."""

import numpy as np
import pytest
from exercise_answers import MOVE_C_WITHOUT_DT_OR_GUARD, cuda_c_runs_on_the_cpu, right_where_it_ran
from numba import cuda

import wd_teach
from wd_teach.device import nvcc_path
from wd_teach.exercises import lesson_00, lesson_01, lesson_02
from wd_teach.lessons.demo import DEMO_CUDA_C
from wd_teach.lessons.demo import move as right_move
from wd_teach.numba_index import agent_id, env_id

# -- lesson 00: the launch shape -----------------------------------------------------------


@pytest.mark.parametrize("sizes, answer", [
    ((10, 300, 128), (30, 128, 840)),      # three blocks per env, the last one partly idle
    ((2000, 256, 1024), (2000, 256, 0)),   # one block per env, every thread busy
    ((4, 5, 2), (12, 2, 4)),
])
def test_launch_shape_accepts_the_right_numbers(sizes, answer, capsys):
    assert lesson_00.check_launch_shape(*sizes, *answer)
    assert "All right" in capsys.readouterr().out


@pytest.mark.parametrize("answer, hint", [
    ((10, 128, 840), "ceil(num_agents / threads_per_block)"),  # one block per env
    ((30, 300, 840), "min(num_agents, max_threads)"),          # a block for all agents
    ((30, 128, 0), "take away one per agent slot"),            # forgot the idle threads
])
def test_launch_shape_rejects_wrong_numbers_with_a_hint(answer, hint, capsys):
    assert not lesson_00.check_launch_shape(10, 300, 128, *answer)
    assert hint in capsys.readouterr().out


def test_launch_shape_waits_for_the_placeholders(capsys):
    assert not lesson_00.check_launch_shape(10, 300, 128, None, ..., 840)
    assert "fill in total_blocks, threads_per_block" in capsys.readouterr().out


# -- lesson 01: pushing into a DataStore ---------------------------------------------------


def right_store(heading):
    store = wd_teach.DataStore(*heading.shape)
    store.push("heading", heading.astype(np.float32), per="agent", reset=True)
    return store


def store_with(name="heading", per="agent", reset=True, convert=np.float32, values=None):
    """A build_store that gets one thing wrong."""
    def build(heading):
        store = wd_teach.DataStore(*heading.shape)
        data = heading if values is None else values(heading)
        store.push(name, data.astype(convert), per=per, reset=reset)
        return store
    return build


def test_heading_store_accepts_the_right_push(capsys):
    assert lesson_01.check_heading_store(right_store)
    assert "All right" in capsys.readouterr().out


@pytest.mark.parametrize("build, hint", [
    (store_with(reset=False), "reset=True"),
    (store_with(per="env"), 'per="agent"'),
    (store_with(per="shared"), 'per="agent"'),
    (store_with(name="headings"), "No array named 'heading'"),
    (store_with(convert=np.float64), "astype(np.float32)"),
    (store_with(values=np.zeros_like), "not the headings passed in"),
    (store_with(values=np.degrees), "not the headings passed in"),
])
def test_heading_store_rejects_a_wrong_push(build, hint, capsys):
    assert not lesson_01.check_heading_store(build)
    assert hint in capsys.readouterr().out


def test_heading_store_wants_a_new_store_each_call(capsys):
    shared = wd_teach.DataStore(*lesson_01.random_headings().shape)

    def build(heading):
        shared.push("heading", heading.astype(np.float32), per="agent", reset=True)
        return shared

    assert not lesson_01.check_heading_store(build)
    assert "Build a new DataStore inside build_store" in capsys.readouterr().out


def test_heading_store_wants_the_store_back(capsys):
    assert not lesson_01.check_heading_store(lambda heading: right_store(heading).pull("heading"))
    assert "return the DataStore itself" in capsys.readouterr().out


def test_heading_store_wants_a_function(capsys):
    assert not lesson_01.check_heading_store(None)
    assert "pass your function" in capsys.readouterr().out


# -- lesson 02: the move kernel, both halves -----------------------------------------------


@cuda.jit
def move_without_guard(pos, vel, dt, num_agents):
    env = env_id()
    agent = agent_id()
    pos[env, agent] += vel[env, agent] * dt


@cuda.jit
def move_by_thread_index(pos, vel, dt, num_agents):
    env = cuda.blockIdx.x
    agent = cuda.threadIdx.x  # forgets the blocks after an environment's first
    if agent < num_agents:
        pos[env, agent] += vel[env, agent] * dt


@cuda.jit
def move_without_dt(pos, vel, dt, num_agents):
    env = env_id()
    agent = agent_id()
    if agent < num_agents:
        pos[env, agent] += vel[env, agent]


@cuda.jit
def move_the_velocity(pos, vel, dt, num_agents):
    env = env_id()
    agent = agent_id()
    if agent < num_agents:
        vel[env, agent] += pos[env, agent] * dt


@cuda.jit
def move_with_other_names(x, v, dt, num_agents):
    env = env_id()
    agent = agent_id()
    if agent < num_agents:
        x[env, agent] += v[env, agent] * dt


needs_cuda_c = pytest.mark.skipif(
    nvcc_path() is None and "pycuda" not in wd_teach.discover().backends,
    reason="checking CUDA C needs nvcc or a GPU with PyCUDA")


def test_move_accepts_the_right_kernels(backend, capsys):
    assert right_where_it_ran(lesson_02.check_move_kernel(right_move, DEMO_CUDA_C, backend))
    out = capsys.readouterr().out
    if "pycuda" in wd_teach.discover().backends:
        assert "All right" in out
    else:  # the CUDA C half did not run on a GPU: the checker must not call the whole right
        assert "All right" not in out
        if not cuda_c_runs_on_the_cpu():  # a GPU without PyCUDA: compiled at most
            assert "NOT checked: what the CUDA C kernel computes, since it was not run" in out
        else:  # no GPU: run on the CPU, one thread after another
            assert "CUDA C kernel, run on the CPU: ran on cpu" in out
            assert "NOT checked: the CUDA C kernel on a GPU" in out


@pytest.mark.parametrize("kernel, hint", [
    (move_without_guard, "threads past the last agent"),
    (move_by_thread_index, "blockIdx.y * blockDim.x + threadIdx.x"),
    (move_without_dt, "positions are off"),
    (move_the_velocity, "vel changed"),
    (move_with_other_names, "the parameters are pos, vel, dt, num_agents"),
])
def test_move_rejects_a_wrong_numba_kernel(kernel, hint, backend, capsys):
    assert not lesson_02.check_move_kernel(kernel, DEMO_CUDA_C, backend)
    assert hint in capsys.readouterr().out


@pytest.mark.parametrize("source, hint", [
    (DEMO_CUDA_C.replace("float* pos", "float* position").replace("pos[i]", "position[i]"),
     "needs 'position'"),
    (DEMO_CUDA_C.replace("float dt", "int dt"), "constant 'dt' is a float"),
    (DEMO_CUDA_C.replace("const float* vel", "const int* vel"), "holds float32"),
    (DEMO_CUDA_C.replace('extern "C" ', ""), 'extern "C" __global__'),
])
def test_move_rejects_cuda_c_that_does_not_bind(source, hint, capsys):
    backend = wd_teach.choose_backend()
    assert not lesson_02.check_move_kernel(right_move, source, backend)
    assert hint in capsys.readouterr().out


@needs_cuda_c
def test_move_rejects_cuda_c_that_does_not_compile(capsys):
    source = DEMO_CUDA_C.replace("vel[i] * dt", "vel[i] * speed")
    assert not lesson_02.check_move_kernel(right_move, source, wd_teach.choose_backend())
    assert 'identifier "speed" is undefined' in capsys.readouterr().out


@pytest.mark.gpu
@pytest.mark.parametrize("source", [
    DEMO_CUDA_C.replace("vel[i] * dt", "vel[i]"),
    DEMO_CUDA_C.replace("pos[i] += vel[i] * dt;", "pos[threadIdx.x] -= vel[i] * dt * 7;"),
])
def test_move_rejects_wrong_cuda_c_arithmetic_where_it_can_run(source, capsys):
    if "pycuda" not in wd_teach.discover().backends:
        pytest.skip("running CUDA C needs PyCUDA, and it is not installed here")
    assert not lesson_02.check_move_kernel(right_move, source, "pycuda")
    out = capsys.readouterr().out
    assert "CUDA C kernel" in out and "positions are off" in out and "All right" not in out


def test_move_waits_for_both_halves(capsys):
    assert not lesson_02.check_move_kernel(right_move, None, wd_teach.choose_backend())
    assert "Not yet" in capsys.readouterr().out


no_gpu_path = pytest.mark.skipif("pycuda" in wd_teach.discover().backends,
                                 reason="checks the no-GPU path (read and compile only); with "
                                        "PyCUDA here the checker runs the CUDA C instead")
#: The notebook's starter: the kernel's signature with a comment for a body.
MOVE_STARTER = DEMO_CUDA_C[:DEMO_CUDA_C.index("{\n  const int env")] + "{\n  // your code\n}\n"


@no_gpu_path
def test_move_rejects_the_starters_empty_cuda_c_body(capsys):
    assert not lesson_02.check_move_kernel(right_move, MOVE_STARTER, "numba")
    out = capsys.readouterr().out
    assert "the body of move is empty" in out and "All right" not in out


@no_gpu_path
@pytest.mark.skipif(not cuda_c_runs_on_the_cpu(), reason="a GPU without PyCUDA compiles the "
                    "CUDA C only; this checks the machine with no GPU, where it runs on the CPU")
@pytest.mark.parametrize("source", [
    DEMO_CUDA_C.replace("pos[i] += vel[i] * dt;", "pos[threadIdx.x] -= vel[i] * dt * 7;"),
    DEMO_CUDA_C.replace("if (agent >= num_agents) return;", ""),
    MOVE_C_WITHOUT_DT_OR_GUARD,
])
def test_wrong_cuda_c_arithmetic_without_a_gpu_is_never_called_right(source, capsys):
    """A wrong body compiles; without a GPU it runs on the CPU, one thread after another
    (wd_teach/exercises/host_c.py), and is found wrong there: neither the verdict nor
    `passed_here` holds, so the solution cell's assert fails on it on a CPU too."""
    verdict = lesson_02.check_move_kernel(right_move, source, "numba")
    out = capsys.readouterr().out
    assert not verdict and not verdict.passed_here, out
    assert "All right" not in out and "CUDA C kernel, run on the CPU" in out
    assert "Not yet: see above what is wrong with the CUDA C kernel." in out
