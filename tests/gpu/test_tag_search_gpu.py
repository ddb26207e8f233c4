"""The Tag games' grid search inside the step, on a GPU, both backends: at 1,100 agents an
env (two blocks of 1,024 threads, each building the env's whole grid) and at the lessons'
110, every array after every step is the NumPy reference's, the store's `nearest` (which
agent each slot shows) included. The CPU twin, on Numba's simulator:
tests/test_tag_search.py."""

import pytest
from test_tag_search import GAMES

from wd_teach.device import BACKENDS as KERNEL_BACKENDS
from wd_teach.env.consistency import check_consistency

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("runners", [100, 1000])
def test_the_grid_search_steps_as_the_reference_does_on_the_gpu(backend, game, runners):
    changes = {"tagging_distance": 1.0} if game == "tag_continuous" else {}
    env = GAMES[game](num_taggers=runners // 10, num_runners=runners, num_nearest=10,
                      episode_length=8, search="grid", **changes)
    report = check_consistency(env, ["numpy", backend], num_envs=3, steps=6)
    report.assert_ok()
