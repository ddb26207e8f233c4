"""A catch that takes several taggers (TagConfig.taggers_needed, envs/_tag/game.py): a runner
is caught only when at least that many taggers are within reach at once, and then each of
them gets tag_reward, so a lone tagger catches no one and taggers must close in together.
With one (the default) the catch is as it always was: the nearest tagger in reach, alone,
is paid. The reference's rule on hand-placed games, then every backend this machine runs
against it step by step (Numba's simulator here; tests/gpu runs PyCUDA and Numba)."""

import numpy as np
import pytest

from wd_teach.env.consistency import check_consistency, random_action_sequence
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach_envs._tag import tag_reference
from wd_teach_envs.tag_continuous.env import TagContinuous
from wd_teach_envs.tag_grid.env import TagGrid

GAMES = {"tag_continuous": TagContinuous, "tag_grid": TagGrid}


def placed_game():
    """One env: taggers 0, 1, 2 and runners 3, 4. Runner 3 has taggers 0 (0.3 away) and 1
    (0.4 away) within reach 0.5; runner 4 has tagger 2 alone."""
    x = np.array([[0.3, 0.0, 9.0, 0.0, 9.0]], np.float32)
    y = np.array([[0.0, 0.4, 9.0, 0.0, 9.3]], np.float32)
    return x, y, np.ones((1, 5), np.int32)


def catch(needed):
    x, y, in_game = placed_game()
    rewards = np.zeros((1, 5), np.float32)
    runners_left = np.array([2], np.int32)
    tag_reference.catch(x, y, in_game, rewards, runners_left, 3, np.float32(0.5),
                        np.float32(1), np.float32(-1), 1, needed)
    return rewards[0], in_game[0], int(runners_left[0])


def test_one_tagger_needed_pays_the_nearest_alone():
    rewards, in_game, left = catch(1)
    assert rewards.tolist() == [1, 0, 1, -1, -1]  # runner 3 by tagger 0 (nearer), 4 by 2
    assert in_game.tolist() == [1, 1, 1, 0, 0] and left == 0


def test_two_needed_catch_only_the_runner_two_reach_and_pay_them_both():
    rewards, in_game, left = catch(2)
    assert rewards.tolist() == [1, 1, 0, -1, 0]  # runner 4 had one tagger: not caught
    assert in_game.tolist() == [1, 1, 1, 0, 1] and left == 1


def test_three_needed_catch_no_one_here():
    rewards, in_game, left = catch(3)
    assert not rewards.any() and in_game.all() and left == 2


def caught_in_the_checks_run(env, num_envs, steps, seed=0) -> int:
    """Runners caught, all envs together, in the run check_consistency makes: the same
    initial state (seed) and the same actions (random_action_sequence), on the reference."""
    wrapper = EnvWrapper(env, num_envs, "numpy", seed=seed, auto_reset=False)
    wrapper.reset()
    before = wrapper.store.pull("runners_left").sum()
    for actions in random_action_sequence(env, num_envs, steps, seed):
        wrapper.step(actions)
    return int(before - wrapper.store.pull("runners_left").sum())


#: Games small enough that catches of two and three taggers happen within the steps: a wide
#: reach on the continuous field, a grid of 4 x 4 cells (a catch there is a shared cell).
CROWDED = {"tag_continuous": {"tagging_distance": 3.0}, "tag_grid": {"grid_size": 4}}


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("needed", [2, 3])
def test_the_kernels_catch_together_as_the_reference_does(backend, game, needed):
    """Every array after every step is the reference's: who leaves, every tagger's pay
    (atomic adds of one value: the same sum in any order), runners_left; in a run where
    runners are caught, so the catch of several is what is compared."""
    env = GAMES[game](num_taggers=6, num_runners=24, num_nearest=5, episode_length=12,
                      taggers_needed=needed, **CROWDED[game])
    assert caught_in_the_checks_run(env, 3, 10) > 0
    report = check_consistency(env, ["numpy", backend], num_envs=3, steps=10)
    report.assert_ok()


@pytest.mark.parametrize("needed", [0, 7, True, 1.5])
def test_a_catch_no_tagger_or_more_than_there_are_is_refused(needed):
    with pytest.raises(EnvError, match="taggers_needed must be a whole number from 1 to "
                                       "num_taggers=6"):
        TagContinuous(num_taggers=6, num_runners=24, taggers_needed=needed)


def test_the_second_pass_pays_taggers_beyond_the_first_tile(backend):
    """More taggers than a tile of shared memory holds (128): the pass that pays each tagger
    of a catch stages the tiles again, and one past the first tile is paid as well (a reach
    over the whole field: every tagger takes part in every catch)."""
    env = TagContinuous(num_taggers=130, num_runners=20, num_nearest=4, episode_length=4,
                        taggers_needed=2, tagging_distance=100.0)
    assert caught_in_the_checks_run(env, 1, 3) == 20  # all at the first step
    report = check_consistency(env, ["numpy", backend], num_envs=1, steps=3)
    report.assert_ok()
