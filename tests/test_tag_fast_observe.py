"""The Tag games' observe twins behind the fast door (each game's observe_fast.cu and
observe_fast_numba.py, on envs/_tag/fast.cuh and fast_numba.py): with the fast floor on, the
wrapper launches one in place of the game's observe (lesson 06's tag_continuous_observe, or
tag_grid_observe), in blocks of as many warps as its shared-memory stage holds rows for, and
every array after every step is still the NumPy reference's, bit for bit, `nearest`
included. Here on Numba's simulator (several blocks an env, both searches, full observation,
a last warp and a last block that are short); on a GPU, both backends at 1,000 agents:
tests/gpu/test_tag_fast_observe_gpu.py."""

import re

import pytest
import torch

from wd_teach.env.consistency import check_consistency
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.floors import set_fast
from wd_teach_envs._tag import fast as tag_fast
from wd_teach_envs.tag_continuous.env import TagContinuous
from wd_teach_envs.tag_grid.env import TagGrid

PLAIN, TWIN = "tag_continuous_observe", "tag_continuous_observe_fast"
#: Each game: its class and its step's kernels before the observe.
GAME_CLASSES = {"continuous": (TagContinuous, ["tag_continuous_move", "tag_catch"]),
                "grid": (TagGrid, ["tag_grid_move", "tag_catch"])}


@pytest.fixture
def fast():
    set_fast(True)
    yield
    set_fast("reset")


def test_the_twin_blocks_are_the_warps_whose_rows_the_stage_holds():
    # lesson 06's game: 77 floats and 10 slots a row; 10,240 floats hold 4 warps' rows
    (twin,) = TagContinuous().fast_kernels()
    assert (twin.replaces, twin.name, twin.threads) == (PLAIN, TWIN, 128)
    assert twin.cuda.is_file()
    # few agents: no more warps than the agents fill
    assert TagContinuous(num_taggers=2, num_runners=20).fast_kernels()[0].threads == 32
    # every agent seen: rows of 7 x 43 floats, one warp's fit; of 7 x 60, none
    full = TagContinuous(num_taggers=3, num_runners=40, num_nearest=None)
    assert full.fast_kernels()[0].threads == 32
    wide = TagContinuous(num_taggers=5, num_runners=55, num_nearest=None)
    assert wide.fast_kernels()[0].threads == 0


def test_the_stage_sizes_are_the_ones_both_kernels_declare():
    from pathlib import Path

    from wd_teach_envs._tag import fast_numba

    source = Path(tag_fast.__file__).with_name("fast.cuh").read_text()
    declared = dict(re.findall(r"#define (FAST_STAGE_\w+) (\d+)", source))
    assert int(declared["FAST_STAGE_FLOATS"]) == tag_fast.FAST_STAGE_FLOATS
    assert int(declared["FAST_STAGE_INTS"]) == tag_fast.FAST_STAGE_INTS
    assert fast_numba.STAGE_FLOATS == tag_fast.FAST_STAGE_FLOATS
    assert fast_numba.STAGE_INTS == tag_fast.FAST_STAGE_INTS


def test_the_grid_games_twin_blocks_are_the_warps_whose_rows_the_stage_holds():
    # 44 floats and 10 slots a row: 10,240 floats hold 7 warps' rows, 1,536 ints 4
    (twin,) = TagGrid(num_taggers=15, num_runners=135, num_nearest=10).fast_kernels()
    assert (twin.replaces, twin.name, twin.threads) == ("tag_grid_observe",
                                                        "tag_grid_observe_fast", 128)
    assert twin.cuda == TagGrid().folder / "observe_fast.cu" and twin.cuda.is_file()
    assert TagGrid(num_taggers=1, num_runners=30).fast_kernels()[0].threads == 32


@pytest.mark.parametrize("game", GAME_CLASSES)
@pytest.mark.parametrize("on", [True, False])
def test_the_wrapper_launches_the_twin_only_behind_the_fast_door(on, game):
    Game, before = GAME_CLASSES[game]
    try:
        set_fast(on)
        env = Game(num_taggers=15, num_runners=135)
        wrapper = EnvWrapper(env, 2, "numba")
        names = [kernel for kernel, _, _ in wrapper.step_launches]
        plain = env.step_kernels[-1]
        assert names == [*before, f"{plain}_fast" if on else plain]
        grid, block = wrapper.step_launches[-1][1:]
        assert (grid, block) == (((2, 2), (128, 1, 1)) if on else (None, None))
        # the NumPy reference steps alone: nothing to launch, nothing to replace
        assert not hasattr(EnvWrapper(env, 2, "numpy"), "step_launches")
    finally:
        set_fast("reset")


@pytest.mark.parametrize("game", GAME_CLASSES)
def test_each_backend_says_what_it_loads_for_the_twin(game):
    """PyCUDA the twin's CUDA C with the env's headers, Numba its module; the exercises'
    CPU runner of CUDA C nothing: the checkers run the kernels a learner reads or writes."""
    from wd_teach.backends import NUMBA, PYCUDA
    from wd_teach.exercises.host_c import HOST_C

    env = GAME_CLASSES[game][0]()
    (twin,) = env.fast_kernels()
    assert PYCUDA.twin_kernels(env, twin) == (twin.cuda, env.include_dirs())
    module, _ = NUMBA.twin_kernels(env, twin)
    assert hasattr(module, twin.name)
    assert HOST_C.twin_kernels(env, twin) is None


GAMES = {
    # 150 agents: two blocks an env, 128 threads and 22 (a short last warp)
    "tiles, two blocks": dict(num_taggers=15, num_runners=135, num_nearest=10),
    "grid, two blocks": dict(num_taggers=15, num_runners=135, num_nearest=10, search="grid"),
    # 16 slots, the most: 119 floats a row, two warps' rows fit
    "sixteen nearest": dict(num_taggers=6, num_runners=60, num_nearest=16),
    # rows of 7 x 43 floats: blocks of one warp, the last of 11 lanes
    "full observation": dict(num_taggers=3, num_runners=40, num_nearest=None),
}


@pytest.mark.parametrize("game", GAMES)
def test_the_twin_steps_as_the_reference_does(fast, game):
    # tagging_distance 2: runners leave the game, so slots empty and rows clear
    env = TagContinuous(episode_length=5, tagging_distance=2.0, **GAMES[game])
    report = check_consistency(env, ["numpy", "numba"], num_envs=2, steps=6)
    report.assert_ok()


#: The grid game's: on a field of 6 x 6 cells, agents meet on a cell and runners leave.
GRID_GAMES = {
    "tiles, two blocks": dict(num_taggers=15, num_runners=135, num_nearest=10),
    "grid, two blocks": dict(num_taggers=15, num_runners=135, num_nearest=10, search="grid"),
    "full observation": dict(num_taggers=3, num_runners=40, num_nearest=None),
}


@pytest.mark.parametrize("game", GRID_GAMES)
def test_the_grid_games_twin_steps_as_the_reference_does(fast, game):
    env = TagGrid(episode_length=5, grid_size=6, **GRID_GAMES[game])
    assert EnvWrapper(env, 2, "numba").step_launches[-1][0] == "tag_grid_observe_fast"
    report = check_consistency(env, ["numpy", "numba"], num_envs=2, steps=6)
    report.assert_ok()


@pytest.mark.parametrize("game", GAME_CLASSES)
@pytest.mark.parametrize("search", ["tiles", "grid"])
def test_the_twin_holds_in_blocks_smaller_than_a_warp(fast, search, game):
    """max_threads=16: the twin's blocks are half warps, and a warp's rows are only the
    block's own (its lanes stop at the block's end, not at 32 or at the last agent)."""
    env = GAME_CLASSES[game][0](num_taggers=4, num_runners=36, num_nearest=5,
                                episode_length=6, search=search)
    wrapper = EnvWrapper(env, 2, "numba", max_threads=16)
    assert wrapper.step_launches[-1][1:] == ((2, 3), (16, 1, 1))
    report = check_consistency(env, ["numpy", "numba"], num_envs=2, steps=4, max_threads=16)
    report.assert_ok()


@pytest.mark.parametrize("game", GAME_CLASSES)
def test_the_twin_writes_what_the_plain_observe_writes(game):
    """Plain and twin, the same actions: every array equal after every step (the reference
    check above allows its tolerance; this one allows nothing)."""
    Game = GAME_CLASSES[game][0]
    close = dict(tagging_distance=2.0) if Game is TagContinuous else dict(grid_size=6)
    env = Game(num_taggers=15, num_runners=135, episode_length=4, **close)
    runs = {}
    try:
        for on in (False, True):
            set_fast(on)
            wrapper = EnvWrapper(env, 2, "numba", seed=3)
            generator = torch.Generator(device=wrapper.device).manual_seed(5)  # a GPU's too
            runs[on] = []
            for _ in range(5):  # past the end of an episode: an auto reset too
                wrapper.step(wrapper.random_actions(generator))
                runs[on].append({n: wrapper.store[n].clone() for n in wrapper.store.names})
    finally:
        set_fast("reset")
    for plain, twin in zip(runs[False], runs[True], strict=True):
        for name in plain:
            assert torch.equal(plain[name], twin[name]), name
