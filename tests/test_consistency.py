"""The consistency check finds where a backend parts from the reference, and says so."""

import numpy as np
import pytest
from numba import cuda

from wd_teach.env import Tolerance
from wd_teach.env.consistency import check_consistency, random_action_sequence
from wd_teach.errors import EnvError
from wd_teach.exercises.lesson_05 import ParkingLine
from wd_teach.numba_index import agent_id, env_id
from wd_teach_envs.pendulum import Pendulum


def make_kernel(bonus_for_all=True, nudge=0.0):
    """The parking line's step, right, or wrong in one way: only agent 0 gets the arrival
    bonus; every position is off by `nudge`."""

    @cuda.jit
    def parking_step(pos, goal, parked, moves, actions, obs, rewards, done, timestep,
                     episode_length, length, reach, arrival_bonus, num_agents):
        env = env_id()
        agent = agent_id()
        if agent >= num_agents:
            return
        i = (env, agent)
        if agent == 0:
            t = timestep[env] + 1
            timestep[env] = t
            done[env] = t >= episode_length
        if parked[i] == 0:
            pos[i] = min(max(pos[i] + moves[actions[i]], np.float32(0.0)), length) + (
                np.float32(nudge))
            distance = abs(goal[env] - pos[i])
            reward = -distance / length
            if distance <= reach:
                parked[i] = 1
                if bonus_for_all or agent == 0:
                    reward = reward + arrival_bonus
            rewards[i] = reward
        else:
            rewards[i] = np.float32(0.0)
        obs[env, agent, 0] = pos[i] / length
        obs[env, agent, 1] = (goal[env] - pos[i]) / length
        obs[env, agent, 2] = np.float32(parked[i])

    return parking_step


def parking(kernel):
    return ParkingLine(kernel, None, num_particles=3, episode_length=20, length=4.0)


def test_a_right_kernel_agrees_everywhere():
    report = check_consistency(parking(make_kernel()), ["numpy", "numba"], steps=6)
    assert report.ok
    assert all(values.max() == 0 for values in report.largest["numba"].values())
    assert "numba: agrees with numpy at every step." in report.table()
    report.assert_ok()


def test_the_first_divergence_names_the_step_array_and_place():
    env = parking(make_kernel(bonus_for_all=False))
    report = check_consistency(env, ["numpy", "numba"], steps=8, seed=1)
    assert not report.ok
    found = report.divergence["numba"]
    assert found.array == "rewards" and found.index[1] >= 1
    assert found.got == pytest.approx(found.want - env.config.arrival_bonus)
    first = report.first_bad_step["numba"]
    assert first["rewards"] == found.step and "pos" not in first
    table = report.table()
    assert f"OUT at step {found.step}" in table
    assert f"numba: first divergence at step {found.step}, rewards[" in table
    with pytest.raises(AssertionError, match="the backends disagree"):
        report.assert_ok()


def test_differences_within_the_tolerance_pass_and_beyond_it_fail():
    env = parking(make_kernel(nudge=1e-3))
    loose = check_consistency(env, ["numpy", "numba"], steps=3, tolerance=Tolerance(atol=1e-2))
    assert loose.ok and 0 < loose.largest["numba"]["pos"].max() <= 4e-3
    tight = check_consistency(env, ["numpy", "numba"], steps=3)
    assert not tight.ok and tight.divergence["numba"].array == "pos"
    assert tight.divergence["numba"].step == 1


def test_given_actions_replace_the_random_ones():
    env = Pendulum()
    actions = random_action_sequence(env, 2, 3, seed=5)
    report = check_consistency(env, ["numpy", "numba"], actions=actions)
    assert report.steps == 3 and report.ok


@pytest.mark.parametrize("backends", [["numpy"], ["numpy", "jax"]])
def test_backends_to_compare_are_checked(backends):
    with pytest.raises(EnvError, match="compares two or more of pycuda, numba, numpy"):
        check_consistency(Pendulum(), backends)
