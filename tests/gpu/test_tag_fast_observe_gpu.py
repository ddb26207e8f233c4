"""The Tag games' observe twins (each game's observe_fast.cu and its Numba twin) on a GPU,
both backends, at 1,000 agents an env (eight blocks of 128 an env, the last of 104) and at
the lessons' 110: every array after every step is the NumPy reference's, and the plain
observe and the twin write the same on the same state, bit for bit. On Numba's simulator:
tests/test_tag_fast_observe.py."""

import pytest
import torch

from wd_teach.device import BACKENDS as KERNEL_BACKENDS
from wd_teach.env.consistency import check_consistency
from wd_teach.env.wrapper import EnvWrapper
from wd_teach.floors import set_fast
from wd_teach_envs.tag_continuous.env import TagContinuous
from wd_teach_envs.tag_grid.env import TagGrid

pytestmark = pytest.mark.gpu


@pytest.fixture
def fast():
    set_fast(True)
    yield
    set_fast("reset")


#: Each game, with runners caught often enough that slots empty and rows clear.
GAMES = {"continuous": (TagContinuous, dict(tagging_distance=1.0)),
         "grid": (TagGrid, dict(grid_size=12))}


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("search", ["tiles", "grid"])
@pytest.mark.parametrize("runners", [100, 1000])
def test_the_twin_steps_as_the_reference_does_on_the_gpu(fast, backend, search, runners, game):
    Game, close = GAMES[game]
    env = Game(num_taggers=runners // 10, num_runners=runners, num_nearest=10,
               episode_length=8, search=search, **close)
    wrapper = EnvWrapper(env, 2, backend)
    assert wrapper.step_launches[-1][0] == f"{env.step_kernels[-1]}_fast"
    report = check_consistency(env, ["numpy", backend], num_envs=3, steps=6)
    report.assert_ok()


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("search", ["tiles", "grid"])
def test_the_twin_writes_what_the_plain_observe_writes_on_the_gpu(fast, backend, search, game):
    env = GAMES[game][0](num_taggers=91, num_runners=909, num_nearest=10, search=search)
    wrapper = EnvWrapper(env, 16, backend, check_actions=False)
    generator = torch.Generator(device=wrapper.device).manual_seed(0)
    for _ in range(4):
        wrapper.step(wrapper.random_actions(generator))
    twin = wrapper.step_launches[-1]
    searched = wrapper.store["nearest"].clone()  # with the grid, the observe's input
    wrapper.launcher.launch(env.step_kernels[-1])  # the plain observe
    want = {n: wrapper.store[n].clone() for n in ("obs", "nearest", "done", "rewards")}
    wrapper.store["obs"].fill_(7.0)  # what the twin fails to write shows
    wrapper.store["nearest"].copy_(searched)
    wrapper.launcher.launch(twin[0], grid=twin[1], block=twin[2])
    for name, array in want.items():
        assert torch.equal(array, wrapper.store[name]), name
