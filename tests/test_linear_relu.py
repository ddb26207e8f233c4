"""Linear-ReLU pairs, and the output layer after them, as one autograd node (the fast floor's
ReLUStack, used by Layers on a GPU): the same function and the same gradients as the plain layers,
checked here on the CPU, where the same fused op exists (tests/gpu/test_training_gpu.py
runs it on a GPU, in fp32 and bf16, where bf16 takes the Triton masked product)."""

import pytest
import torch
from torch import nn

from wd_teach.fast import policy
from wd_teach.fast.policy import (
    CLASSES,
    AlignedInput,
    FastCategoricalActorCritic,
    Layers,
    ReLUStack,
    relu_stack,
)
from wd_teach.train.policy import mlp


def params(*shapes):
    return [torch.randn(*shape, dtype=torch.float64, requires_grad=True) for shape in shapes]


@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("layers, with_output", [
    ([(4, 5)], False), ([(4, 5), (3, 4)], False), ([(4, 5), (3, 4), (2, 3)], True),
    ([(4, 5), (2, 4)], True)], ids=["one pair", "two pairs", "two pairs+output",
                                    "one pair+output"])
def test_the_stack_has_the_layers_gradients(input_grad, layers, with_output):
    """gradcheck: every layer's weight and bias gradient, and the input's, against finite
    differences, with and without an output layer after the pairs."""
    torch.manual_seed(0)
    x = torch.randn(9, 5, dtype=torch.float64, requires_grad=input_grad)
    weights = [p for out, inp in layers for p in params((out, inp), (out,))]
    assert torch.autograd.gradcheck(lambda x, *w: ReLUStack.apply(x, with_output, *w),
                                    (x, *weights))


def test_the_stack_is_the_layers():
    """Two ReLU layers and an output layer: the plain layers' outputs, and both sides of
    every ReLU taken."""
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
    x = torch.randn(50, 6)
    fused = relu_stack([net[0], net[2]], x, net[4])
    torch.testing.assert_close(fused, net(x), rtol=1e-6, atol=1e-6)
    hidden = relu_stack([net[0]], x)
    assert (hidden == 0).any() and (hidden > 0).any()
    torch.testing.assert_close(relu_stack([net[0], net[2]], x, (net[4].weight, net[4].bias)),
                               fused, rtol=0, atol=0)


def test_leading_dims_and_the_padded_input_layer():
    torch.manual_seed(2)
    net = mlp([77, 16], 3, 1.0, nn.ReLU, first=AlignedInput)  # AlignedInput, ReLU, Linear
    x = torch.randn(4, 5, 77)
    out = relu_stack([net[0]], x)  # pads 77 -> 80 features, as on a GPU
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
    net = FastCategoricalActorCritic(77, [5, 3], [32, 32], shared=shared,
                                     activation=activation).double()
    x = torch.randn(64, 77, dtype=torch.float64)
    plain_out = net.actor_and_value(x)
    plain_grads = torch.autograd.grad(sum(o.square().sum() for o in plain_out),
                                      net.parameters())
    calls, fused_product = [], torch._addmm_activation
    monkeypatch.setattr(policy, "fuses", lambda x: True)
    monkeypatch.setattr(policy, "stacks_heads", lambda x: True)
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
    net = make_policy("stochastic", 10, space, [16], shared=True, activation="relu",
                      classes=CLASSES).double()
    features = torch.randn(3, 7, 16, dtype=torch.float64)
    both = net.split(net.stacked_heads(features))
    apart = net.actor(features), net.critic(features).squeeze(-1)
    heads = [*net.actor.parameters(), *net.critic.parameters()]
    for a, b in zip(both, apart, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    grads = [torch.autograd.grad(sum(o.square().sum() for o in out), heads)
             for out in (both, apart)]
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_fixed_weights_makes_each_weights_form_once(monkeypatch):
    """Inside fixed_weights (a rollout: no gradient, no weight changes) the padded input
    weight and the stacked output layers are made once however many steps run, the
    outputs are the same as outside it, and a later block sees the weights as they are
    then. With a gradient taken nothing is kept."""
    monkeypatch.setattr(policy, "fuses", lambda x: True)
    monkeypatch.setattr(policy, "stacks_heads", lambda x: True)
    torch.manual_seed(6)
    net = FastCategoricalActorCritic(77, [3, 3], [16, 16], shared=True, activation="relu")
    x = torch.randn(5, 77)
    made = []
    for name in ("_stacked", "padded_weight"):
        owner = net if name == "_stacked" else net.body[0]
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda real=real, name=name: made.append(name) or real())
    want = net.outputs(x)
    made.clear()
    with torch.no_grad(), policy.fixed_weights():
        steps = [net.outputs(x) for _ in range(4)]
    assert sorted(made) == ["_stacked", "padded_weight"]
    for got in steps:
        assert torch.equal(got, want)
    with torch.no_grad():
        net.actor.bias.add_(1.0)
        with policy.fixed_weights():
            after = net.outputs(x)
    assert torch.equal(after[..., :6], want[..., :6] + 1)  # the new bias, not a kept one
    made.clear()
    with policy.fixed_weights():  # a gradient is taken: every call makes its own
        net.outputs(x).sum().backward()
        net.outputs(x)
    assert made.count("_stacked") == 2
