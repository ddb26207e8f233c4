"""Reset and episode log at full size on a GPU: both backends restore exactly the done
environments, and agree."""

import numpy as np
import pytest
import torch

from wd_teach import DataStore, EpisodeLog, Resetter
from wd_teach.device import BACKENDS

ENVS, AGENTS = 2_000, 1_500  # two blocks per environment


def make_store(rng):
    store = DataStore(ENVS, AGENTS, episode_length=3)
    store.push("pos", rng.normal(size=(ENVS, AGENTS, 2)).astype(np.float32), reset=True)
    store.push("alive", np.ones((ENVS, AGENTS), np.uint8), reset=True)
    store.push("steps", np.zeros(ENVS, np.int32), per="env", reset=True)
    store.push("seen", np.zeros((ENVS, AGENTS), np.uint32), reset=True)
    return store


@pytest.mark.parametrize("backend", BACKENDS)
def test_only_done_envs_go_back_to_their_start(backend):
    rng = np.random.default_rng(5)
    store = make_store(rng)
    resetter = Resetter(store, backend=backend)
    log = EpisodeLog(store, ["pos", "steps"], envs=[0, 1, ENVS - 1])
    log.record()
    store["pos"].add_(1)
    store["alive"].zero_()
    store["steps"].fill_(3)
    store["seen"].view(torch.int32).fill_(9)
    done = torch.from_numpy(rng.integers(0, 2, ENVS).astype(np.int32)).cuda()
    done[:2] = torch.tensor([1, 0], dtype=torch.int32)
    resetter.done.copy_(done)
    log.record()
    resetter.reset()
    log.record()

    is_done = done.bool()
    for name in resetter.names:
        # torch cannot index uint32 tensors on the GPU: compare their bits as int32
        live, pristine = (t.view(torch.int32) if t.dtype == torch.uint32 else t
                          for t in (store[name], store.pristine(name)))
        assert torch.equal(live[is_done], pristine[is_done]), name
        assert not torch.equal(live[~is_done], pristine[~is_done]), name
    assert int(store["done"].sum()) == 0
    steps = log.pull().arrays["steps"]
    np.testing.assert_array_equal(steps[:, :2], [[0, 0], [3, 3], [0, 3]])


def test_both_backends_reset_alike():
    results = []
    for backend in BACKENDS:
        store = make_store(np.random.default_rng(8))
        resetter = Resetter(store, backend=backend)
        store["pos"].mul_(3)
        resetter.done.copy_(torch.arange(ENVS, dtype=torch.int32, device="cuda") % 3 == 0)
        resetter.reset()
        results.append(store["pos"].clone())
    assert torch.equal(*results)
