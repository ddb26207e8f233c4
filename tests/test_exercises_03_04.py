"""The checkers of 03_sampler and 04_reset_and_log say yes to right answers and no, with a
hint, to wrong ones."""

import numpy as np
import pytest
from numba import cuda

from wd_teach.exercises import lesson_03, lesson_04
from wd_teach.numba_index import agent_id, env_id

# -- lesson 03: the inverse-CDF draw --------------------------------------------------------


def right_draw(probs, u):
    cumulative = np.float32(0)
    last_possible = 0
    for action, p in enumerate(probs):
        if p > 0:
            last_possible = action
        cumulative += p
        if u < cumulative:
            return action
    return last_possible


def at_or_below(probs, u):  # u <= sum: draws an action at a running sum's edge
    return int(np.argmax(u <= np.cumsum(probs, dtype=np.float32)))


def last_action(probs, u):  # past the end: the last action, even if impossible
    cumulative = np.cumsum(probs, dtype=np.float32)
    return int(np.argmax(u < cumulative)) if (u < cumulative).any() else len(probs) - 1


def test_draw_checker_accepts_the_inverse_cdf(capsys):
    assert lesson_03.check_draw(right_draw)
    assert "All right" in capsys.readouterr().out


@pytest.mark.parametrize("draw, hint", [
    (at_or_below, "use u < sum, not u <= sum"),
    (last_action, "last action with p > 0"),
    (lambda probs, u: 0, "u < 1 always"),
    (lambda probs, u: float(np.argmax(probs)), "a whole number"),
    (lambda probs, u: probs[7], "IndexError"),
    (None, "Not yet"),
])
def test_draw_checker_rejects_wrong_draws_with_a_hint(draw, hint, capsys):
    assert not lesson_03.check_draw(draw)
    assert hint in capsys.readouterr().out


# -- lesson 04: the reset kernel -------------------------------------------------------------


@cuda.jit
def right_reset(data, pristine, done, row_length):
    env = env_id()
    if done[env] == 0:
        return
    flat_data = data.reshape(data.size)
    flat_pristine = pristine.reshape(pristine.size)
    for i in range(agent_id(), row_length, cuda.gridDim.y * cuda.blockDim.x):
        flat_data[env * row_length + i] = flat_pristine[env * row_length + i]


@cuda.jit
def resets_everything(data, pristine, done, row_length):
    env = env_id()
    flat_data = data.reshape(data.size)
    flat_pristine = pristine.reshape(pristine.size)
    for i in range(agent_id(), row_length, cuda.gridDim.y * cuda.blockDim.x):
        flat_data[env * row_length + i] = flat_pristine[env * row_length + i]


@cuda.jit
def one_value_per_thread(data, pristine, done, row_length):
    env = env_id()
    if done[env] == 0:
        return
    flat_data = data.reshape(data.size)
    flat_pristine = pristine.reshape(pristine.size)
    if agent_id() < row_length:
        flat_data[env * row_length + agent_id()] = flat_pristine[env * row_length + agent_id()]


@cuda.jit
def clears_the_flag(data, pristine, done, row_length):
    env = env_id()
    if done[env] == 0:
        return
    flat_data = data.reshape(data.size)
    flat_pristine = pristine.reshape(pristine.size)
    for i in range(agent_id(), row_length, cuda.gridDim.y * cuda.blockDim.x):
        flat_data[env * row_length + i] = flat_pristine[env * row_length + i]
    done[env] = 0


@cuda.jit
def misnamed(values, pristine, done, row_length, extra):
    pass


def test_reset_checker_accepts_a_strided_copy_of_done_rows(capsys):
    assert lesson_04.check_reset_kernel(right_reset)
    assert "All right" in capsys.readouterr().out


@pytest.mark.parametrize("kernel, hint", [
    (resets_everything, "Return early when done[env] == 0"),
    (one_value_per_thread, "stride over the row together"),
    (clears_the_flag, "the done flags changed"),
    (misnamed, "the parameters are data, pristine, done, row_length"),
    (right_draw, "as a Numba kernel"),
])
def test_reset_checker_rejects_wrong_kernels_with_a_hint(kernel, hint, capsys):
    assert not lesson_04.check_reset_kernel(kernel)
    assert hint in capsys.readouterr().out


@cuda.jit
def does_nothing(data, pristine, done, row_length):
    pass


def test_reset_checker_says_not_yet_to_the_empty_stub(capsys):
    assert not lesson_04.check_reset_kernel(does_nothing)
    assert "Not yet" in capsys.readouterr().out
