"""A Linear followed by a ReLU as one fused product (LinearReLU, used by Layers on a GPU):
the same function and the same gradients as the pair, checked here on the CPU, where the
same fused op exists (tests/gpu/test_training_gpu.py runs it on a GPU, in fp32 and bf16)."""

import pytest
import torch
from torch import nn

from wd_teach.train import policy
from wd_teach.train.policy import CategoricalActorCritic, Layers, LinearReLU, linear_relu, mlp


@pytest.mark.parametrize("input_grad", [True, False])
def test_the_fused_pair_has_the_pairs_gradients(input_grad):
    torch.manual_seed(0)
    x = torch.randn(9, 5, dtype=torch.float64, requires_grad=input_grad)
    weight = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(LinearReLU.apply, (x, weight, bias))


def test_the_fused_pair_is_relu_of_the_linear():
    torch.manual_seed(1)
    linear = nn.Linear(6, 8)
    x = torch.randn(50, 6)
    fused = LinearReLU.apply(x, linear.weight, linear.bias)
    torch.testing.assert_close(fused, torch.relu(linear(x)), rtol=1e-6, atol=1e-6)
    assert (fused == 0).any() and (fused > 0).any()  # both sides of the ReLU were taken


def test_leading_dims_and_the_padded_input_layer():
    torch.manual_seed(2)
    net = mlp([77, 16], 3, out_gain=1.0, activation=nn.ReLU)  # AlignedInput, ReLU, Linear
    x = torch.randn(4, 5, 77)
    out = linear_relu(net[0], x)  # pads 77 -> 80 features, as on a GPU
    assert out.shape == (4, 5, 16)
    torch.testing.assert_close(out, torch.relu(net[0](x)), rtol=1e-5, atol=1e-6)


def test_layers_is_nn_sequential_on_the_cpu():
    torch.manual_seed(3)
    modules = [nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)]
    layers, plain = Layers(*modules), nn.Sequential(*modules)
    assert list(layers.state_dict()) == list(plain.state_dict())  # checkpoints unchanged
    x = torch.randn(7, 3)
    assert torch.equal(layers(x), plain(x))


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_a_fused_policy_computes_the_unfused_one(monkeypatch, shared, activation):
    """The fused path as a GPU takes it, run on the CPU: outputs and weight gradients equal
    the plain path's; every ReLU pair ran as one fused product, no tanh layer did."""
    torch.manual_seed(4)
    net = CategoricalActorCritic(77, [5, 3], [32, 32], shared=shared,
                                 activation=activation).double()
    x = torch.randn(64, 77, dtype=torch.float64)
    plain_out = net.actor_and_value(x)
    plain_grads = torch.autograd.grad(sum(o.square().sum() for o in plain_out),
                                      net.parameters())
    calls, fused_product = [], torch._addmm_activation
    monkeypatch.setattr(policy, "fuses", lambda x: True)
    monkeypatch.setattr(torch, "_addmm_activation",
                        lambda *a, **k: calls.append(1) or fused_product(*a, **k))
    fused_out = net.actor_and_value(x)
    fused_grads = torch.autograd.grad(sum(o.square().sum() for o in fused_out),
                                      net.parameters())
    assert len(calls) == {"relu": 2 if shared else 4, "tanh": 0}[activation]
    for a, b in zip((*fused_out, *fused_grads), (*plain_out, *plain_grads), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("continuous", [False, True])
def test_both_heads_in_one_product_are_the_two_output_layers(continuous):
    """A shared body's actor and critic output layers stacked into one product (padded to
    8 outputs): the same logits (or means) and value, and the same weight gradients."""
    from gymnasium import spaces

    from wd_teach.train.policy import make_policy

    torch.manual_seed(5)
    space = spaces.Box(-1, 1, (2,)) if continuous else spaces.MultiDiscrete([5, 3])
    net = make_policy("stochastic", 10, space, [16], shared=True, activation="relu").double()
    features = torch.randn(3, 7, 16, dtype=torch.float64)
    both = net.both_heads(features)
    apart = net.actor(features), net.critic(features).squeeze(-1)
    heads = [*net.actor.parameters(), *net.critic.parameters()]
    for a, b in zip(both, apart, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    grads = [torch.autograd.grad(sum(o.square().sum() for o in out), heads)
             for out in (both, apart)]
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
