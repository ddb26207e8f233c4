"""The checker of 06_tag's GPU exercise (the catch, counted with an atomic, in Numba and in
CUDA C) says yes to a right catch and no, naming what is wrong, to the usual wrong ones; and
where the CUDA C cannot run it never says "All right". Also: the race demo's twins agree, and
its measurement and pictures say what was measured.

The Numba kernels run here (the simulator, or a GPU). The CUDA C ones run only with PyCUDA
on a GPU (tests/gpu/test_exercise_catch_gpu.py); here they meet the no-GPU path (forced by
`no_pycuda`, so it is tested on a GPU machine too). The answers, right and wrong, are
tests/exercise_answers.py's, shared with the GPU twin.
"""

import numpy as np
import pytest
from exercise_answers import (
    CATCH_C,
    CATCH_C_EXCHANGE_ON_IN_GAME,
    catches_nothing,
    exchange_on_in_game,
    make_catch,
    plain_count,
    right_where_it_ran,
    says_the_cuda_c_did_not_run_on_a_gpu,
    without_pycuda,
)
from matplotlib import pyplot as plt

import wd_teach
from wd_teach import cuda_c
from wd_teach._simulator import simulator_on
from wd_teach.device import nvcc_path
from wd_teach.errors import WdTeachError
from wd_teach.exercises import lesson_06
from wd_teach.exercises.atomics import atomic_targets
from wd_teach.exercises.races import kernels_numba as races_numba
from wd_teach.exercises.races import pictures as race_pictures
from wd_teach.exercises.races import races


@pytest.fixture
def no_pycuda(monkeypatch):
    """The checker as it runs on a machine where PyCUDA cannot run, on any machine."""
    without_pycuda(monkeypatch)


def test_the_catch_checker_accepts_a_right_catch(capsys):
    assert right_where_it_ran(lesson_06.check_catch(make_catch(), CATCH_C, "numba"))
    out = capsys.readouterr().out
    assert "Numba kernel: ran on numba" in out and ": right." in out
    if "pycuda" in wd_teach.discover().backends:
        assert "CUDA C kernel: ran on pycuda" in out and "All right" in out
    else:
        assert "NOT checked" in out and "All right" not in out


@pytest.mark.parametrize("kernel, says", [
    (make_catch(runners_only=False), ["is a tagger", "Only runners"]),
    (make_catch(playing_only=False), ["num_caught went up by", "already out of the game"]),
    (make_catch(at_distance=False), ["should be caught", "exactly at it", "<="]),
    (make_catch(adds=False), ["do not overwrite it"]),
    (make_catch().py_func, ["Not yet"]),
    (catches_nothing, ["Not yet: catch_runners changed nothing"]),
])
def test_the_catch_checker_rejects_wrong_numba_catches_naming_what_is_wrong(kernel, says,
                                                                            capsys):
    assert not lesson_06.check_catch(kernel, CATCH_C, "numba")
    out = capsys.readouterr().out
    assert "All right" not in out
    for piece in says:
        assert piece in out


@pytest.mark.parametrize("kernel, says", [
    (plain_count, "it has no atomic operation at all"),
    (exchange_on_in_game, "its atomics go elsewhere (exch on in_game)"),
])
def test_a_catch_that_counts_without_an_atomic_add_is_rejected_where_it_runs(kernel, says,
                                                                            capsys):
    """Under the simulator the plain += counts right, so the checker reads from the kernel's
    IR which array its atomics go to and says why; on a GPU the plain += loses counts in the
    crowd case (or, by chance not, the IR says it)."""
    verdict = lesson_06.check_catch(kernel, CATCH_C, "numba")
    assert not verdict and not verdict.passed_here
    out = capsys.readouterr().out
    assert "All right" not in out
    if simulator_on():
        assert says in out and "one at a time" in out
    else:
        assert "adds were lost" in out or says in out


def test_the_atomics_targets_are_read_from_the_ir():
    assert atomic_targets(make_catch().py_func) == {"num_caught": {"add"}}
    assert atomic_targets(plain_count.py_func) == {}
    assert atomic_targets(exchange_on_in_game.py_func) == {"in_game": {"exch"}}


def test_without_pycuda_a_right_cuda_c_catch_is_reported_as_not_run(no_pycuda, capsys):
    verdict = lesson_06.check_catch(make_catch(), CATCH_C, "numba")
    assert not verdict and verdict.passed_here
    out = capsys.readouterr().out
    assert "All right" not in out
    assert says_the_cuda_c_did_not_run_on_a_gpu(out), out


@pytest.mark.parametrize("source, says", [
    (CATCH_C.replace("atomicAdd(&num_caught[env], 1);", "num_caught[env] += 1;"),
     "no atomicAdd on num_caught in catch_runners"),
    (CATCH_C_EXCHANGE_ON_IN_GAME, "no atomicAdd on num_caught in catch_runners"),
    (CATCH_C.replace("int* num_caught", "float* num_caught"), "'num_caught' holds int32"),
    (CATCH_C.replace("tagging_distance", "reach"), "needs 'reach', but the store has no"),
    (CATCH_C.replace("in_game[me] = 0;", "in_game[me] = 0"), "could not compile"),
    (CATCH_C[:CATCH_C.index("  const int env")] + "  // your code\n}\n",
     "the body of catch_runners is empty"),
    (None, "Not yet"),
])
def test_without_pycuda_wrong_cuda_c_is_rejected_before_it_could_run(no_pycuda, source, says,
                                                                      capsys):
    if says == "could not compile" and nvcc_path() is None:
        pytest.skip("a compile error needs nvcc to be found, and nvcc is not on this machine")
    assert not lesson_06.check_catch(make_catch(), source, "numba")
    out = capsys.readouterr().out
    assert says in out and "All right" not in out


# -- the race demo -----------------------------------------------------------------------------


def test_the_race_kernels_are_twins():
    c_kernels = {name: [p.name for p in params] for name, params in
                 cuda_c.kernel_signatures(cuda_c.read_source(races.CUDA_C_PATH)).items()}
    numba_kernels = {name: list(races_numba.__dict__[name].py_func.__code__.co_varnames[:2])
                     for name in races.KERNELS}
    assert c_kernels == numba_kernels == {name: ["hits", "num_agents"] for name in races.KERNELS}


def test_an_atomic_add_loses_nothing_and_the_measurement_says_so():
    lost = races.lost_updates("numba", [1, 3, 8], num_envs=2)
    assert list(lost) == list(races.KERNELS)
    assert np.array_equal(lost["count_atomic"], np.zeros(3))
    assert np.all((lost["count_plain"] >= 0) & (lost["count_plain"] < 1))


@pytest.mark.parametrize("threads, envs", [([], 2), ([0], 2), ([4], 0)])
def test_the_measurement_refuses_sizes_it_cannot_measure(threads, envs):
    with pytest.raises(WdTeachError, match="at least one count of threads"):
        races.lost_updates("numba", threads, envs)


def test_the_race_picture_ends_the_plain_add_at_6_and_the_atomic_at_7():
    plain, atomic = race_pictures.draw_race()
    assert [t.get_text() for t in plain.texts][-1] == "counter 6"
    assert [t.get_text() for t in atomic.texts][-1] == "counter 7"
    assert len(plain.patches) == 4 and len(atomic.patches) == 2  # read, write; one atomic each
    plt.close("all")


def test_the_lost_updates_picture_draws_each_kernel_of_each_backend_in_percent():
    lost = {"numba": {"count_plain": np.array([0.0, 0.5]), "count_atomic": np.zeros(2)}}
    ax = race_pictures.draw_lost_updates([1, 2], lost)
    lines = {line.get_label(): line.get_ydata() for line in ax.lines}
    assert np.array_equal(lines["numba: count_plain"], [0, 50])
    assert np.array_equal(lines["numba: count_atomic"], [0, 0])
    plt.close("all")
