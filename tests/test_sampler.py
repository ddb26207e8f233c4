"""The action sampler: the same draws as the NumPy reference, the right frequencies, and
clear errors for probabilities that are not probabilities."""

import inspect

import numpy as np
import pytest
import torch

from wd_teach import (
    DataStore,
    KernelLauncher,
    ProbabilityError,
    Sampler,
    SamplerError,
    StoreError,
    cuda_c,
)
from wd_teach.sampler import kernels_numba as sampler_numba
from wd_teach.sampler.reference import (
    chi_square_critical,
    chi_square_test,
    count_actions,
    reference_argmax,
    reference_sample,
)
from wd_teach.sampler.sampler import ARGMAX_PARAMS, CUDA_C_PATH, SAMPLE_PARAMS, check_probabilities

ENVS, AGENTS = 3, 4


def make_sampler(backend, num_actions=3, envs=ENVS, agents=AGENTS, **kw):
    store = DataStore(envs, agents)
    return store, Sampler(store, num_actions, backend=backend, **kw)


def random_probs(store, num_actions, seed=0, zeros=True):
    """Softmax rows, some with impossible (p = 0) actions."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn((store.num_envs, store.num_agents, num_actions), generator=generator)
    if zeros and num_actions > 1:
        logits[0, 0, 0] = logits[1, :, -1] = -torch.inf
    return torch.softmax(logits, dim=-1).to(store.device)


def host(tensors):
    return [t.cpu().numpy() for t in tensors]


# -- the same draws everywhere ---------------------------------------------------------------


@pytest.mark.parametrize("num_actions", [5, [3, 5, 2]])
def test_draws_match_the_numpy_reference_call_after_call(backend, num_actions):
    store, sampler = make_sampler(backend, num_actions, seed=11)
    counts = num_actions if isinstance(num_actions, list) else [num_actions]
    probs = [random_probs(store, n, seed=h) for h, n in enumerate(counts)]
    given = probs if isinstance(num_actions, list) else probs[0]
    for call in range(3):
        draws = store.pull("rng_counter")
        assert (draws == call).all()
        actions = sampler.sample(given).cpu().numpy()
        assert actions.shape == sampler.actions_shape and actions.dtype == np.int32
        np.testing.assert_array_equal(actions, reference_sample(host(probs), 11, draws))


def test_a_policy_that_writes_into_the_buffer_draws_the_same(backend):
    store, sampler = make_sampler(backend, [2, 3], seed=4)
    probs = [random_probs(store, 2, 1), random_probs(store, 3, 2)]
    first = sampler.sample(probs).clone()
    sampler.seed(4)
    for head, p in enumerate(probs):
        sampler.head_probs[head].copy_(p)  # what a policy would do in place
    assert torch.equal(sampler.sample(), first)
    assert torch.equal(sampler.probs, torch.cat(probs, dim=-1))


def test_the_same_seed_draws_the_same_and_another_seed_does_not(backend):
    store, sampler = make_sampler(backend, 6, seed=5)
    probs = random_probs(store, 6, zeros=False)
    first = sampler.sample(probs).clone()
    second = sampler.sample(probs).clone()
    assert not torch.equal(first, second)
    sampler.seed(5)
    assert torch.equal(sampler.sample(probs), first)
    sampler.seed(6)
    assert not torch.equal(sampler.sample(probs), first)
    assert sampler.current_seed == 6


def test_argmax_takes_the_first_most_probable_and_draws_no_numbers(backend):
    store, sampler = make_sampler(backend, [4, 3])
    probs = [random_probs(store, 4), random_probs(store, 3, seed=1)]
    probs[0][2, 1] = torch.tensor([0.1, 0.4, 0.4, 0.1])  # a tie: the first wins
    actions = sampler.argmax(probs).cpu().numpy()
    np.testing.assert_array_equal(actions, reference_argmax(host(probs)))
    assert actions[2, 1, 0] == 1
    for head, p in enumerate(probs):
        np.testing.assert_array_equal(actions[..., head], p.argmax(-1).cpu().numpy())
    assert (store.pull("rng_counter") == 0).all()


def test_agents_split_over_several_blocks_all_draw(backend):
    store = DataStore(2, 5)
    sampler = Sampler(store, 3, backend=backend, seed=3, max_threads=2)
    probs = random_probs(store, 3)
    np.testing.assert_array_equal(sampler.sample(probs).cpu().numpy(),
                                  reference_sample(probs.cpu().numpy(), 3, np.zeros((2, 5))))
    assert (store.pull("rng_counter") == 1).all()


# -- the right frequencies -------------------------------------------------------------------


def draw_many(sampler, probs, launches):
    """`sample()` returns the store's live actions: each launch's are copied before the next."""
    return np.stack([sampler.sample(probs).cpu().numpy().copy() for _ in range(launches)])


def test_frequencies_pass_a_chi_square_test(backend):
    store, sampler = make_sampler(backend, 4, seed=2024)
    row = torch.tensor([0.1, 0.2, 0.3, 0.4])
    probs = row.expand(ENVS, AGENTS, 4).contiguous().to(store.device)
    actions = draw_many(sampler, probs, launches=100)  # 1,200 draws
    fit = chi_square_test(count_actions(actions.ravel(), 4), row.numpy())
    assert fit.passed, str(fit)


def test_two_heads_are_independent_by_chi_square(backend):
    store, sampler = make_sampler(backend, [2, 3], seed=99)
    accel, turn = torch.tensor([0.3, 0.7]), torch.tensor([0.5, 0.25, 0.25])
    probs = [p.expand(ENVS, AGENTS, len(p)).contiguous().to(store.device) for p in (accel, turn)]
    actions = draw_many(sampler, probs, launches=80).reshape(-1, 2)  # 960 pairs
    joint = count_actions(actions[:, 0] * 3 + actions[:, 1], 6)
    fit = chi_square_test(joint, np.outer(accel.numpy(), turn.numpy()).ravel())
    assert fit.passed, str(fit)


def test_impossible_actions_are_never_drawn(backend):
    store, sampler = make_sampler(backend, 5, seed=8)
    row = torch.tensor([0.0, 0.5, 0.0, 0.5, 0.0])
    probs = row.expand(ENVS, AGENTS, 5).contiguous().to(store.device)
    assert set(np.unique(draw_many(sampler, probs, launches=10))) == {1, 3}


def test_a_row_a_hair_short_of_one_falls_back_to_its_last_possible_action(backend):
    store, sampler = make_sampler(backend, 3, checked=False, seed=1)
    probs = torch.zeros(ENVS, AGENTS, 3, device=store.device)
    probs[..., 0] = 1e-7  # sums to almost nothing: every u falls past the end
    np.testing.assert_array_equal(sampler.sample(probs).cpu().numpy(), 0)
    probs[..., 1] = 1e-7
    np.testing.assert_array_equal(sampler.sample(probs).cpu().numpy(), 1)


def test_unchecked_bad_rows_still_draw_as_the_reference_does(backend):
    store, sampler = make_sampler(backend, 4, checked=False, seed=7)
    probs = random_probs(store, 4)
    probs[0, 1, 2] = torch.nan
    probs[1, 2] = torch.tensor([-0.5, 0.9, 0.3, 0.3])
    draws = store.pull("rng_counter")
    np.testing.assert_array_equal(sampler.sample(probs).cpu().numpy(),
                                  reference_sample(probs.cpu().numpy(), 7, draws))


@pytest.mark.parametrize("dof, alpha, exact", [(1, 1e-3, 10.828), (3, 1e-3, 16.266),
                                               (10, 1e-3, 29.588), (100, 1e-3, 149.449),
                                               (5, 0.05, 11.070)])
def test_chi_square_critical_values_are_close_to_the_tables(dof, alpha, exact):
    assert chi_square_critical(dof, alpha) == pytest.approx(exact, abs=1e-3)


def test_chi_square_fails_skewed_counts_and_impossible_draws():
    assert not chi_square_test([500, 500], [0.9, 0.1]).passed
    assert chi_square_test([1, 5, 4], [0.0, 0.5, 0.5]).statistic == float("inf")
    assert chi_square_test([[30, 70], [48, 52]], [[0.3, 0.7], [0.5, 0.5]]).dof == 2


# -- clear errors at the door ----------------------------------------------------------------


def nan_at(p):
    p[1, 2, 0] = torch.nan
    return p


def negative_at(p):
    p[2, 3] = torch.tensor([-0.25, 0.75, 0.5])
    return p


def short_at(p):
    p[0, 1] = torch.tensor([0.3, 0.3, 0.3])
    return p


@pytest.mark.parametrize("bad, error, message", [
    (lambda p: p.cpu().numpy(), SamplerError, "must be a torch tensor"),
    (lambda p: p.double(), SamplerError, "torch.float64; the kernel reads float32"),
    (lambda p: p[..., :2], SamplerError, r"shape \(3, 4, 2\); want .* = \(3, 4, 3\)"),
    (lambda p: p.to("meta"), SamplerError, "are on meta"),
    (nan_at, ProbabilityError, "env 1, agent 2, head 0 hold NaN"),
    (lambda p: p.index_fill_(-1, torch.tensor([1], device=p.device), torch.inf),
     ProbabilityError,
     "env 0, agent 0, head 0 hold NaN or infinity"),
    (negative_at, ProbabilityError, r"env 2, agent 3, head 0 hold a negative value \(-0.25\)"),
    (short_at, ProbabilityError, r"env 0, agent 1, head 0 sum to 0.9, not 1 \(tolerance"),
    (lambda p: p * 2, ProbabilityError, "11 other row"),
])
def test_bad_probabilities_are_refused_and_the_buffer_is_untouched(bad, error, message):
    store, sampler = make_sampler("numba", 3)
    probs = random_probs(store, 3)
    before = sampler.probs.clone()
    with pytest.raises(error, match=message):
        sampler.sample(bad(probs.clone()))
    assert torch.equal(sampler.probs, before)
    assert (store.pull("rng_counter") == 0).all()


def test_errors_name_the_head_with_several_heads():
    store, sampler = make_sampler("numba", [3, 2])
    good, bad = random_probs(store, 3), random_probs(store, 2)
    bad[2, 0, 1] = -1.0
    with pytest.raises(ProbabilityError, match="env 2, agent 0, head 1"):
        sampler.sample([good, bad])
    with pytest.raises(SamplerError, match=r"head 1: probabilities have shape \(3, 4, 3\)"):
        sampler.sample([good, good])
    with pytest.raises(SamplerError, match="got probabilities for 1 head"):
        sampler.sample([good])
    with pytest.raises(SamplerError, match="pass a list of 2 tensors"):
        sampler.sample(good)


def test_checked_mode_checks_the_buffer_too_and_the_tolerance_is_the_one_given():
    store, sampler = make_sampler("numba", 3, tolerance=0.2)
    sampler.sample(torch.full((ENVS, AGENTS, 3), 0.3, device=store.device))  # 0.9: within 0.2
    sampler.probs[1, 1, 1] = torch.nan
    with pytest.raises(ProbabilityError, match="env 1, agent 1"):
        sampler.sample()
    with pytest.raises(ProbabilityError, match="tolerance 1e-06"):
        check_probabilities(torch.full((1, 1, 2), 0.4999), tolerance=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    ({"num_actions": 0}, "at least 1"),
    ({"num_actions": -2}, "at least 1"),
    ({"num_actions": True}, "whole number of actions"),
    ({"num_actions": 2.5}, "whole number of actions"),
    ({"num_actions": []}, "num_actions is empty"),
    ({"num_actions": [3, 0]}, "at least 1"),
    ({"num_actions": 3, "seed": -1}, r"\[0, 2\*\*64\)"),
    ({"num_actions": 3, "seed": 0.5}, "whole number"),
    ({"num_actions": 3, "tolerance": 0}, "positive number"),
    ({"num_actions": 3, "tolerance": float("nan")}, "positive number"),
])
def test_bad_settings_are_refused_before_anything_is_pushed(kwargs, message):
    store = DataStore(ENVS, AGENTS)
    with pytest.raises(SamplerError, match=message):
        Sampler(store, backend="numba", **kwargs)
    assert store.names == []


def test_a_store_holds_one_sampler_and_its_actions_must_fit():
    store, _ = make_sampler("numba", 3)
    with pytest.raises(SamplerError, match="already has 'probs'"):
        Sampler(store, 3)
    with pytest.raises(SamplerError, match="needs a DataStore"):
        Sampler({"probs": None}, 3)
    store = DataStore(ENVS, AGENTS)
    store.push("actions", np.zeros((ENVS, AGENTS), np.float32))
    with pytest.raises(SamplerError, match=r"float32 \(3, 4\); the sampler writes int32"):
        Sampler(store, 3)


def test_an_actions_array_the_env_pushed_is_used_in_place():
    store = DataStore(ENVS, AGENTS)
    store.push("actions", np.full((ENVS, AGENTS, 2), 9, np.int32))
    sampler = Sampler(store, [2, 2])
    actions = store["actions"]
    assert sampler.sample([random_probs(store, 2)] * 2) is actions
    assert actions.max() <= 1


def test_a_sampler_is_built_before_the_store_is_frozen():
    store = DataStore(ENVS, AGENTS)
    store.freeze()
    with pytest.raises(StoreError, match="frozen"):
        Sampler(store, 3)


def test_the_kernels_take_the_parameters_the_sampler_binds():
    """The store names are the kernels' parameter names, in both backends' kernels."""
    signatures = cuda_c.kernel_signatures(CUDA_C_PATH.read_text())
    for kernel, params in (("sample_actions", SAMPLE_PARAMS), ("argmax_actions", ARGMAX_PARAMS)):
        assert tuple(p.name for p in signatures[kernel]) == params
        numba_kernel = getattr(sampler_numba, kernel)
        assert tuple(inspect.signature(numba_kernel.py_func).parameters) == params
    store = DataStore(ENVS, AGENTS)
    sampler = Sampler(store, 2, backend="numba")
    assert isinstance(sampler.launcher, KernelLauncher)
    assert "Sampler(numba, 2 actions, 3 envs x 4 agents, seed 0, checked)" == repr(sampler)


def test_reference_sampler_draws_what_the_kernels_draw():
    """The NumPy backend's sampler (no kernel) and the Numba kernel on the same seed."""
    from wd_teach.sampler.reference import ReferenceSampler

    probs = torch.softmax(torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1)), -1)
    kernel = Sampler(DataStore(3, 4, device="cpu"), [2, 3], backend="numba", seed=9)
    twin = ReferenceSampler(DataStore(3, 4, device="cpu"), [2, 3], seed=9)
    for _ in range(3):
        heads = [probs[..., :2].contiguous(), probs[..., 2:].contiguous()]
        heads = [h / h.sum(-1, keepdim=True) for h in heads]
        assert torch.equal(kernel.sample(heads).clone(), twin.sample(heads).clone())
    assert torch.equal(kernel.argmax(heads).clone(), twin.argmax(heads).clone())
