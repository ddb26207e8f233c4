"""The checker of lesson 05's second exercise (agents that read each other: each keeps its
distance from its nearest neighbour) says yes to a right kernel and no, in words, to a
kernel without a barrier, one that returns before it, one whose barrier sits in a branch that
spare threads skip, and one that finds the wrong neighbour; and it never hangs."""

import sys
import threading

import numpy as np
import pytest
from exercise_answers import (
    SPACING_C_BARRIER_IN_BRANCH,
    SPACING_CU,
    make_barrier_in_branch,
    right_where_it_ran,
    spacing_step,
)
from numba import cuda

import wd_teach
from wd_teach._simulator import simulator_on
from wd_teach.device import nvcc_path
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.exercises import barriers, lesson_05
from wd_teach.numba_index import agent_id, env_id


def make_no_barrier():
    """No barrier: the reads may see neighbours that have not moved yet."""

    @cuda.jit
    def spacing_step(pos, moves, actions, obs, rewards, done, timestep, episode_length, length,
                     spacing, num_agents):
        env = env_id()
        agent = agent_id()
        active = agent < num_agents
        i = (env, agent)
        if active:
            pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length)
        if active:  # reads the others with nothing to wait for their moves
            nearest = -1
            for other in range(num_agents):
                if other != agent and (nearest < 0 or abs(pos[env, other] - pos[i])
                                       < abs(pos[env, nearest] - pos[i])):
                    nearest = other
            offset = pos[env, nearest] - pos[i]
            rewards[i] = -abs(abs(offset) - spacing) / length
            obs[env, agent, 0] = pos[i] / length
            obs[env, agent, 1] = offset / length
        if agent == 0:
            t = timestep[env] + 1
            timestep[env] = t
            done[env] = t >= episode_length

    return spacing_step


def make_return_before_barrier():
    """The guard of the goal line kept: threads past the last agent return first."""

    @cuda.jit
    def spacing_step(pos, moves, actions, obs, rewards, done, timestep, episode_length,
                     length, spacing, num_agents):
        env = env_id()
        agent = agent_id()
        if agent >= num_agents:
            return  # the threads past the last agent never reach the barrier
        i = (env, agent)
        pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length)
        cuda.syncthreads()
        nearest = -1
        for other in range(num_agents):
            if other != agent and (nearest < 0 or abs(pos[env, other] - pos[i])
                                   < abs(pos[env, nearest] - pos[i])):
                nearest = other
        offset = pos[env, nearest] - pos[i]
        rewards[i] = -abs(abs(offset) - spacing) / length
        obs[env, agent, 0] = pos[i] / length
        obs[env, agent, 1] = offset / length
        if agent == 0:
            t = timestep[env] + 1
            timestep[env] = t
            done[env] = t >= episode_length

    return spacing_step


def make_counts_itself():
    """A wrong neighbour: each agent is its own nearest, at distance 0."""

    @cuda.jit
    def spacing_step(pos, moves, actions, obs, rewards, done, timestep, episode_length, length,
                     spacing, num_agents):
        env = env_id()
        agent = agent_id()
        active = agent < num_agents
        i = (env, agent)
        if active:
            pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length)
        cuda.syncthreads()
        if active:
            nearest = -1
            for other in range(num_agents):  # the bug: an agent is its own nearest neighbour
                if nearest < 0 or abs(pos[env, other] - pos[i]) < abs(pos[env, nearest] - pos[i]):
                    nearest = other
            offset = pos[env, nearest] - pos[i]
            rewards[i] = -abs(abs(offset) - spacing) / length
            obs[env, agent, 0] = pos[i] / length
            obs[env, agent, 1] = offset / length
        if agent == 0:
            t = timestep[env] + 1
            timestep[env] = t
            done[env] = t >= episode_length

    return spacing_step


def test_the_reference_finds_the_nearest_other_agent():
    pos = np.array([[1.0, 4.0, 2.0, 2.5]], np.float32)
    offsets = lesson_05.nearest_offsets(pos)
    assert offsets.tolist() == [[1.0, -1.5, 0.5, -0.5]]


def test_the_checkers_run_moves_agents_that_read_each_other():
    """Without the barrier the reads see unmoved neighbours: the check's steps must move
    agents, or a missing barrier would go unseen."""
    num_envs, num_agents = lesson_05.spacing_check_sizes()
    env = lesson_05.Spacing(num_agents=num_agents, episode_length=6, length=4.0, step_size=0.5)
    wrapper = EnvWrapper(env, num_envs, "numpy", auto_reset=False)
    before = wrapper.store.pull("pos").copy()
    wrapper.step(wrapper.random_actions())
    assert (wrapper.store.pull("pos") != before).any()


def test_spacing_step_accepts_the_right_kernels(backend, capsys):
    assert right_where_it_ran(lesson_05.check_spacing_step(spacing_step, SPACING_CU, backend))
    out = capsys.readouterr().out
    if "pycuda" in wd_teach.discover().backends:
        assert "All right" in out
    else:  # the CUDA C half was compiled at most: the checker must not call it right
        assert "All right" not in out and "was not run" in out
        assert "whether every thread reaches it was NOT checked by a run here" in out


@pytest.mark.parametrize("kernel, hint", [
    (make_no_barrier(), "no barrier between the move and the reads"),
    (make_return_before_barrier(), "never reach the barrier"),
    (make_barrier_in_branch(), "never reach the barrier"),
    (make_counts_itself(), "never itself"),
])
def test_spacing_step_rejects_a_wrong_numba_kernel(kernel, hint, backend, capsys):
    verdict = lesson_05.check_spacing_step(kernel, SPACING_CU, backend)
    assert not verdict and not verdict.passed_here
    out = capsys.readouterr().out
    assert hint in out
    if "never reach" in hint:
        if simulator_on():  # counted in a launch with spare threads
            assert "threads 4..31 reached 0" in out or "reached 0 barrier" in out
        else:  # read in the code, never launched: on a GPU it could hang
            assert "not run" in out


def test_the_barrier_count_sees_spare_threads_skip_a_barrier_in_a_branch():
    """The behaviour behind the refusal: launched with a block larger than the agents, the
    agents' threads reach the barrier and the spare ones never do."""
    if not simulator_on():
        pytest.skip("the simulator's threads are what is counted; a GPU's cannot be")
    env = lesson_05.Spacing(make_barrier_in_branch(), num_agents=3)
    wrapper = EnvWrapper(env, 2, "numba")
    with barriers.counting_barriers() as counts:
        wrapper.launcher.launch("spacing_step", block=(8, 1, 1))
    reached = [sorted((t.threadIdx.x, n) for t, n in threads.items())
               for threads in counts.values()]
    assert reached == [[(0, 1), (1, 1), (2, 1), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0)]] * 2
    assert "never reach the barrier" in barriers.barrier_problems(counts)[0]
    with barriers.counting_barriers() as counts:
        EnvWrapper(lesson_05.Spacing(spacing_step, num_agents=3), 2, "numba").launcher.launch(
            "spacing_step", block=(8, 1, 1))
    assert barriers.barrier_problems(counts) == []


def test_a_return_before_the_barrier_does_not_hang_the_simulator():
    """Why no run shows an early return, so the checker reads the code for it: the
    simulator releases a barrier once every thread still running waits at it, and threads
    that returned are not waited for (on a GPU that is undefined). Launched by hand, with a
    block of 4 threads for 3 agents, the padding thread returns and the block still ends."""
    if not simulator_on():
        pytest.skip("the simulator's barrier is what is tested; on a GPU this is undefined")
    env = lesson_05.Spacing(make_return_before_barrier(), num_agents=3)
    state = env.full_state(2)
    args = [state[name].data for name in ("pos", "moves", "actions", "obs", "rewards", "done",
                                          "timestep")]
    kernel = env.numba_kernels()[0]
    launch = threading.Thread(target=kernel[(2, 1), (4, 1, 1)], daemon=True,
                              args=(*args, np.int32(6), np.float32(10.0), np.float32(1.0),
                                    np.int32(3)))
    launch.start()
    launch.join(60)
    assert not launch.is_alive(), "the simulator hung at a barrier a thread never reached"


@pytest.mark.parametrize("source, hint", [
    (SPACING_CU.replace("__syncthreads();", ""), "no barrier between the move and the reads"),
    (SPACING_CU.replace("const bool active", "if (agent >= num_agents) return;\n  const bool "
                                             "active"), "never reach the barrier"),
    (SPACING_C_BARRIER_IN_BRANCH, "never reach the barrier"),
    (SPACING_CU.replace("float* pos,", "float* position,"), "needs 'position'"),
    (SPACING_CU.replace("spacing_step(", "keep_apart("), "named spacing_step"),
])
def test_spacing_step_rejects_cuda_c_without_a_barrier_or_that_does_not_bind(source, hint,
                                                                               capsys):
    if "pycuda" in wd_teach.discover().backends and "barrier" not in hint:
        pytest.skip("checks the no-GPU path (bind and compile only); with PyCUDA here the "
                    "checker runs the CUDA C instead")
    assert not lesson_05.check_spacing_step(spacing_step, source, "numba")
    assert hint in capsys.readouterr().out


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not on this machine")
def test_spacing_step_rejects_cuda_c_that_does_not_compile(capsys):
    if "pycuda" in wd_teach.discover().backends:
        pytest.skip("checks the no-GPU path (compile only); with PyCUDA here the checker "
                    "runs the CUDA C instead")
    source = SPACING_CU.replace("const float offset = pos[nearest] - pos[i];",
                                "const float offset = pos[nearest] - x;")
    assert not lesson_05.check_spacing_step(spacing_step, source, "numba")
    assert 'identifier "x" is undefined' in capsys.readouterr().out


def test_spacing_step_waits_for_both_halves(capsys):
    assert not lesson_05.check_spacing_step(spacing_step, None)
    assert "Not yet" in capsys.readouterr().out


def test_on_a_gpu_the_barriers_are_read_from_the_code():
    """Where a launch cannot be watched (a GPU), the code is read: the same answers, the same
    findings as the count on the simulator."""
    assert barriers.numba_barrier_problems(spacing_step) == []
    assert barriers.numba_barrier_problems(make_no_barrier()) == [barriers.NO_BARRIER]
    for kernel in (make_return_before_barrier(), make_barrier_in_branch()):
        assert barriers.numba_barrier_problems(kernel) == [barriers.UNREACHED]
    assert barriers.cuda_c_barrier_problems(SPACING_CU, "spacing_step") == []
    assert barriers.cuda_c_barrier_problems(SPACING_C_BARRIER_IN_BRANCH, "spacing_step") == [
        barriers.UNREACHED]
    guarded = SPACING_CU.replace("  __syncthreads();", "  if (active) __syncthreads();")
    assert barriers.cuda_c_barrier_problems(guarded, "spacing_step") == [barriers.UNREACHED]


FAKE_SANITIZER = """#!{python}
import subprocess, sys
args = sys.argv[sys.argv.index("--error-exitcode") + 2:]
done = subprocess.run(args)
if {barrier_error}:
    print("========= Barrier error detected. Divergent thread(s) in block")
    sys.exit(int(sys.argv[sys.argv.index("--error-exitcode") + 1]))
sys.exit(done.returncode)
"""


@pytest.mark.parametrize("barrier_error, script, found", [
    (False, "print(input())", []),
    (True, "print(input())", "Barrier error detected. Divergent thread(s) in block"),
    (False, "raise SystemExit(3)", "could not run the kernel"),
])
def test_synccheck_reads_what_compute_sanitizer_says(barrier_error, script, found, tmp_path,
                                                      monkeypatch):
    """The plumbing of the GPU's barrier check, with a stand-in for compute-sanitizer that
    runs the script and, when told to, reports a barrier error as the tool does."""
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(FAKE_SANITIZER.format(python=sys.executable, barrier_error=barrier_error))
    tool.chmod(0o755)
    monkeypatch.setattr(barriers, "compute_sanitizer", lambda: str(tool))
    result = barriers.synccheck(script, stdin="launched")
    if isinstance(found, list):
        assert result == found
    elif barrier_error:
        assert found in result[0] and barriers.UNREACHED in result[0]
    else:
        assert isinstance(result, str) and found in result


def test_synccheck_says_when_compute_sanitizer_is_not_here(monkeypatch):
    monkeypatch.setattr(barriers, "compute_sanitizer", lambda: None)
    assert barriers.synccheck("print('launched')") == "compute-sanitizer is not on this machine"
