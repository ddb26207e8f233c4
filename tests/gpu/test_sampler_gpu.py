"""The sampler at full size on a GPU: right frequencies, the same actions from PyCUDA, Numba
and NumPy for the same seed, and 20 million agents in one launch."""

import numpy as np
import pytest
import torch

from wd_teach import DataStore, Sampler
from wd_teach.device import BACKENDS
from wd_teach.sampler.reference import chi_square_test, reference_sample

#: Four distributions over 10 actions, some with impossible actions; agent a uses row a % 4.
ROWS = torch.tensor([
    [0.1] * 10,
    [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625, 0.001953125,
     0.001953125],
    [0.0, 0.3, 0.0, 0.3, 0.0, 0.2, 0.0, 0.1, 0.0, 0.1],
    [0.91] + [0.01] * 9,
])


def grouped_probs(envs, agents):
    index = torch.arange(agents) % len(ROWS)
    return ROWS[index].expand(envs, agents, ROWS.shape[1]).contiguous().cuda()


def counts_by_row(actions: torch.Tensor, agents: int) -> np.ndarray:
    """Counts [row, action] from actions [..., envs, agents], counted on the GPU."""
    row_of_agent = (torch.arange(agents, device=actions.device) % len(ROWS)).expand_as(actions)
    cells = row_of_agent.long() * ROWS.shape[1] + actions.long()
    counts = torch.bincount(cells.reshape(-1), minlength=ROWS.numel())
    return counts.view(len(ROWS), ROWS.shape[1]).cpu().numpy()


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_million_draws_pass_a_chi_square_test(backend):
    envs, agents = 2_000, 256
    store = DataStore(envs, agents)
    sampler = Sampler(store, ROWS.shape[1], backend=backend, seed=12345)
    probs = grouped_probs(envs, agents)
    draws = torch.stack([sampler.sample(probs).clone() for _ in range(4)])
    fit = chi_square_test(counts_by_row(draws, agents), ROWS.numpy(), alpha=1e-4)
    assert fit.passed, str(fit)
    assert (store.pull("rng_counter") == 4).all()


def test_pycuda_numba_and_numpy_draw_the_same_actions():
    envs, agents, heads = 1_000, 300, [5, 3, 7]
    generator = torch.Generator(device="cuda").manual_seed(1)
    probs = [torch.softmax(torch.randn((envs, agents, n), generator=generator, device="cuda"),
                           dim=-1) for n in heads]
    probs[0][:, ::3, 1] = 0  # impossible actions too
    probs[0] /= probs[0].sum(dim=-1, keepdim=True)
    drawn = {}
    for backend in BACKENDS:
        store = DataStore(envs, agents)
        sampler = Sampler(store, heads, backend=backend, seed=2**63 + 5)
        drawn[backend] = [sampler.sample(probs).clone() for _ in range(3)]
        drawn[backend].append(sampler.argmax(probs).clone())
    for call in range(4):
        assert torch.equal(drawn["pycuda"][call], drawn["numba"][call]), f"call {call}"
    host = [p.cpu().numpy() for p in probs]
    for call in range(3):
        want = reference_sample(host, 2**63 + 5, np.full((envs, agents), call, np.uint32))
        np.testing.assert_array_equal(drawn["numba"][call].cpu().numpy(), want)


def test_twenty_million_agents_in_one_launch():
    envs, agents = 20_000, 1_000
    probs = grouped_probs(envs, agents)
    drawn = {}
    for backend in BACKENDS:
        store = DataStore(envs, agents)
        sampler = Sampler(store, ROWS.shape[1], backend=backend, seed=7, checked=False)
        sampler.probs.copy_(probs)  # as a policy writing in place would
        drawn[backend] = sampler.sample().clone()
        assert bool((store["rng_counter"].view(torch.int32) == 1).all())
        del sampler, store
        torch.cuda.empty_cache()
    assert torch.equal(drawn["pycuda"], drawn["numba"])
    fit = chi_square_test(counts_by_row(drawn["numba"], agents), ROWS.numpy(), alpha=1e-4)
    assert fit.passed, str(fit)
