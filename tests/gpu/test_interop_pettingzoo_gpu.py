"""PettingZoo's ParallelEnv on a GPU: PettingZoo's own API test on the kernel backends
(PyCUDA and Numba, on the device), and a game through the ParallelEnv step by step beside
the EnvWrapper on the same backend (same seed, same actions: the same observations, rewards
and endings), for every multi-agent env. The CPU twin: tests/test_interop_pettingzoo.py."""

import pytest

from wd_teach.device import BACKENDS as KERNEL_BACKENDS

pytest.importorskip("pettingzoo", reason='PettingZoo is an extra: pip install -e '
                    '".[pettingzoo]" (the dev extra has it)')
from pettingzoo.test import parallel_api_test  # noqa: E402
from test_interop_pettingzoo import (  # noqa: E402
    CROWDED,
    MULTI_AGENT,
    play_beside_the_wrapper,
    small,
)

from wd_teach.interop.pettingzoo import PettingZooEnv  # noqa: E402


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("name", MULTI_AGENT)
def test_pettingzoo_parallel_api_test_passes_on_the_gpu(name, backend, recwarn):
    env = PettingZooEnv(small(name), backend)
    assert env.wrapper.device.type == "cuda"
    parallel_api_test(env, num_cycles=30)
    assert [str(w.message) for w in recwarn if "pettingzoo" in w.filename] == []


@pytest.mark.parametrize("backend", KERNEL_BACKENDS)
@pytest.mark.parametrize("name", MULTI_AGENT)
def test_a_game_through_pettingzoo_is_the_wrappers_game_on_the_gpu(name, backend):
    left_early = play_beside_the_wrapper(name, backend)
    if name in CROWDED:  # the crowded games tag runners before time is up
        assert left_early and all(a.startswith("runner") for a in left_early), left_early
    else:  # the others keep every agent to the end
        assert left_early == []
