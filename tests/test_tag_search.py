"""The Tag games' two searches inside the step (envs/_tag/game.py, `search=`): with
search="grid" the step launches tag_nearest_grid before the observe kernel, which then reads
the slots it wrote instead of searching itself. Either way every array after every step is
the NumPy reference's (the store's `nearest`, which agent each slot shows, included, so a
slot chosen differently fails even where the observation would hide it), on every backend
this machine runs: here Numba's simulator; tests/gpu/test_tag_search_gpu.py runs PyCUDA and
Numba on a GPU, at a game of over 1,024 agents."""

import numpy as np
import pytest

from wd_teach.env.consistency import check_consistency
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.errors import EnvError
from wd_teach_envs._tag.game import grid_side_for
from wd_teach_envs.tag_continuous.env import TagContinuous
from wd_teach_envs.tag_grid.env import TagGrid

GAMES = {"tag_continuous": TagContinuous, "tag_grid": TagGrid}


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("search", ["tiles", "grid"])
def test_each_search_steps_as_the_reference_does(backend, game, search):
    # small: tagging_distance 2 on the continuous field, so runners leave the game and the
    # searches meet agents out of it
    changes = {"tagging_distance": 2.0} if game == "tag_continuous" else {}
    env = GAMES[game](num_taggers=3, num_runners=27, num_nearest=6, episode_length=12,
                      search=search, **changes)
    report = check_consistency(env, ["numpy", backend], num_envs=3, steps=10)
    report.assert_ok()


@pytest.mark.parametrize("game", GAMES)
def test_the_grid_search_holds_across_several_blocks_of_one_env(backend, game):
    """max_threads below the agents: each env takes several blocks, each building the env's
    whole grid (a block's barrier waits only for its own threads)."""
    env = GAMES[game](num_taggers=4, num_runners=36, num_nearest=5, episode_length=6,
                      search="grid")
    report = check_consistency(env, ["numpy", backend], num_envs=2, steps=5, max_threads=16)
    report.assert_ok()


def test_the_step_launches_the_grid_search_just_before_the_observe():
    assert TagContinuous().step_kernels == (
        "tag_continuous_move", "tag_catch", "tag_continuous_observe")
    assert TagGrid(search="grid").step_kernels == (
        "tag_grid_move", "tag_catch", "tag_nearest_grid", "tag_grid_observe")


def test_the_store_says_which_agent_each_slot_shows():
    wrapper = EnvWrapper(TagContinuous(num_taggers=2, num_runners=8, num_nearest=3,
                                       tagging_distance=0.0), num_envs=2, backend="numpy")
    wrapper.reset()
    wrapper.step(wrapper.random_actions())
    nearest = wrapper.store.pull("nearest")
    x, y = wrapper.store.pull("loc_x"), wrapper.store.pull("loc_y")
    assert nearest.shape == (2, 10, 3) and nearest.dtype == np.int32
    for env in range(2):
        for agent in range(10):
            d2 = (x[env] - x[env, agent]) ** 2 + (y[env] - y[env, agent]) ** 2
            d2[agent] = np.inf
            assert list(nearest[env, agent]) == list(np.argsort(d2, kind="stable")[:3])


def test_the_grid_has_about_two_agents_a_cell():
    assert grid_side_for(1000) == 22 and grid_side_for(110) == 7 and grid_side_for(2) == 1
    assert grid_side_for(2048) == 32 and grid_side_for(100_000) == 32
    game = TagGrid(num_taggers=10, num_runners=990, search="grid")
    assert game.constants()["grid_side"] == 22 and game.constants()["search_grid"] == 1


def test_the_kernels_size_their_grid_for_the_agents_per_cell_the_game_aims_at():
    """Each block sizes its grid by the agents still in the game, for AGENTS_PER_CELL a
    cell, the number grid_side_for uses for the whole game: the three say one number."""
    import re
    from pathlib import Path

    from wd_teach_envs._tag import game, nearest_numba

    source = (Path(game.__file__).with_name("nearest.cu")).read_text()
    (declared,) = re.findall(r"#define TAG_GRID_AGENTS_PER_CELL (\d+)", source)
    assert int(declared) == nearest_numba.AGENTS_PER_CELL == game.AGENTS_PER_CELL


def test_a_step_kernel_takes_blocks_of_its_own_size(backend):
    """Env.step_threads: the grid search in blocks of 32 threads (three an env of 70 agents,
    each building the env's whole grid), the game's other kernels one thread an agent in one
    block; every array after every step is the reference's."""

    class SmallBlocks(TagContinuous):
        step_threads = {"tag_nearest_grid": 32}

    env = SmallBlocks(num_taggers=7, num_runners=63, num_nearest=5, episode_length=6,
                      tagging_distance=2.0, search="grid")
    launches = {kernel: (grid, block) for kernel, grid, block in
                EnvWrapper(env, 2, backend).step_launches}
    assert launches["tag_nearest_grid"] == ((2, 3), (32, 1, 1))
    assert launches["tag_continuous_move"] == (None, None)  # the launcher's: (2, 1), (70,)
    check_consistency(env, ["numpy", backend], num_envs=2, steps=5).assert_ok()


@pytest.mark.parametrize("fast", [False, True])
def test_the_games_run_the_grid_search_in_blocks_of_grid_threads(fast):
    """The games' grid search in blocks of GRID_THREADS (512: envs/_tag/game.py says what it
    gained on an H100), two an env of 1,000 agents; a game of no more agents than that, one
    block an env as the launcher gives. The other kernels launch as in the same game searched
    by tiles, on either floor (the fast floor's observe twin has block sizes of its own)."""
    from wd_teach.floors import set_fast
    from wd_teach_envs._tag.game import GRID_THREADS

    def launches(game, agents, search):
        env = game(num_taggers=agents[0], num_runners=agents[1], search=search)
        return {kernel: (grid, block) for kernel, grid, block in
                EnvWrapper(env, 1, "numba").step_launches}

    assert GRID_THREADS == 512
    set_fast(fast)
    try:
        for game, agents, want in ((TagContinuous, (91, 909), ((1, 2), (512, 1, 1))),
                                   (TagGrid, (91, 909), ((1, 2), (512, 1, 1))),
                                   (TagContinuous, (46, 466), (None, None))):
            grid = launches(game, agents, "grid")
            assert grid.pop("tag_nearest_grid") == want, (game.__name__, agents)
            assert grid == launches(game, agents, "tiles"), (game.__name__, agents)
    finally:
        set_fast("reset")


def test_an_env_held_in_one_block_cannot_split_a_kernel_over_blocks():
    class Contradictory(TagContinuous):
        one_block_per_env = True
        step_threads = {"tag_nearest_grid": 32}

    env = Contradictory(num_taggers=7, num_runners=63, search="grid")
    with pytest.raises(EnvError, match="one_block_per_env.*cannot split tag_nearest_grid"):
        EnvWrapper(env, 2, "numba")


@pytest.mark.parametrize("game", GAMES)
def test_the_grid_search_holds_as_the_game_empties(backend, game):
    """Runners leave fast here (a wide reach, or a field of 3 x 3 squares): from 60 agents
    in the game to 6 to 15 in 8 steps, so the blocks size their grids from 5 cells a side
    down to 2 or 3, and the slots stay the reference's."""
    changes = {"tagging_distance": 8.0} if game == "tag_continuous" else {"grid_size": 3}
    env = GAMES[game](num_taggers=6, num_runners=54, num_nearest=4, episode_length=10,
                      search="grid", **changes)
    report = check_consistency(env, ["numpy", backend], num_envs=3, steps=8)
    report.assert_ok()


@pytest.mark.parametrize("changes, says", [
    ({"search": "kd-tree"}, "search must be one of tiles, grid, got 'kd-tree'"),
    ({"search": "grid", "num_nearest": None}, "num_nearest=None shows every agent"),
    ({"search": "grid", "num_taggers": 100, "num_runners": 2000},
     "at most 2,048; this game has 2,100. Use search='tiles'"),
])
def test_a_search_the_game_cannot_use_is_refused(changes, says):
    with pytest.raises(EnvError, match=says):
        TagContinuous(**changes)


def test_a_tag_checkpoint_saved_before_the_nearest_array_still_resumes(tmp_path):
    """A checkpoint from before the store had `nearest`: every step rewrites that array
    before reading it (TagGame.rewritten_each_step), so resuming keeps the fresh store's
    and the next step overwrites it. Any other missing array is still refused
    (tests/test_runs.py)."""
    from wd_teach.errors import TrainError
    from wd_teach.train.checkpoint import write_checkpoint
    from wd_teach.train.trainer import Trainer

    sets = ["trainer.iterations=1", "trainer.steps=4", "env.num_envs=2"]
    trainer = Trainer("tag_continuous", gpu=False, sets=sets)
    trainer.train()
    state = trainer.state_dict()
    del state["store"]["nearest"]
    old = write_checkpoint(state, tmp_path / "before_nearest.safetensors")
    resumed = Trainer("tag_continuous", gpu=False, sets=sets).load(old)
    assert resumed.iteration == 1
    resumed.wrapper.step(resumed.wrapper.random_actions())
    assert resumed.wrapper.store.pull("nearest").min() >= 0  # written by the step
    del state["store"]["in_game"]
    lacking = write_checkpoint(state, tmp_path / "lacking.safetensors")
    with pytest.raises(TrainError, match="lacks the store array\\(s\\) in_game "):
        Trainer("tag_continuous", gpu=False, sets=sets).load(lacking)
