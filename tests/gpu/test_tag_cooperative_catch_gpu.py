"""A catch that takes several taggers (TagConfig.taggers_needed), on a GPU, both backends:
every array after every step is the NumPy reference's, in the lessons' game of 110 agents
and in one of 1,100 (two blocks an env, and more taggers than a tile of shared memory
holds, so the second pass that pays each tagger stages several tiles). The CPU twin, on
Numba's simulator: tests/test_tag_cooperative_catch.py."""

import pytest
from test_tag_cooperative_catch import CROWDED, GAMES, caught_in_the_checks_run

from wd_teach.device import BACKENDS as KERNEL_BACKENDS
from wd_teach.env.consistency import check_consistency

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("taggers, runners", [(10, 100), (200, 900)])
def test_the_kernels_catch_together_as_the_reference_does_on_the_gpu(backend, game, taggers,
                                                                     runners):
    # the small game crowded so that catches of two happen; the large one as it comes
    # (with 200 taggers about a third of its 2,700 runners are caught in the six steps)
    changes = CROWDED[game] if taggers < 100 else {}
    env = GAMES[game](num_taggers=taggers, num_runners=runners, num_nearest=10,
                      episode_length=8, taggers_needed=2, **changes)
    assert 0 < caught_in_the_checks_run(env, 3, 6) < 3 * runners
    report = check_consistency(env, ["numpy", backend], num_envs=3, steps=6)
    report.assert_ok()
