"""The fast floor's input layer pads to 16-byte rows on a GPU: the same function, the same
parameters (tests/gpu/test_training_gpu.py runs the padded path on a GPU)."""

import pytest
import torch
from torch import nn

from wd_teach.fast.policy import AlignedInput, FastCategoricalActorCritic, Layers
from wd_teach.train.policy import CategoricalActorCritic


@pytest.mark.parametrize("width", [1, 7, 77, 80])
def test_the_padded_product_is_the_plain_one(width):
    torch.manual_seed(width)
    layer = AlignedInput(width, 16)
    x = torch.randn(33, width)
    plain = nn.functional.linear(x, layer.weight, layer.bias)
    torch.testing.assert_close(layer.padded(x), plain, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(layer(x), plain, rtol=0, atol=0)  # the CPU never pads


def test_padding_reaches_only_the_weight_it_pads_from():
    torch.manual_seed(0)
    layer = AlignedInput(5, 3)
    x = torch.randn(4, 5)
    layer.padded(x).square().sum().backward()
    padded_grad = layer.weight.grad.clone()
    layer.weight.grad = None
    nn.functional.linear(x, layer.weight, layer.bias).square().sum().backward()
    assert padded_grad.shape == (3, 5)
    torch.testing.assert_close(padded_grad, layer.weight.grad, rtol=1e-6, atol=1e-6)


def test_only_the_first_layer_is_padded_and_parameters_keep_their_shapes():
    torch.manual_seed(0)
    net = FastCategoricalActorCritic(77, [3], [32, 32]).actor
    kinds = [type(m) for m in net if isinstance(m, nn.Linear)]
    assert kinds == [AlignedInput, nn.Linear, nn.Linear] and isinstance(net, Layers)
    assert net[0].weight.shape == (32, 77)
    # the same start as the plain floor's nn.Linear first layer: the padding changes no draw
    torch.manual_seed(0)
    again = CategoricalActorCritic(77, [3], [32, 32])
    assert type(again.actor[0]) is nn.Linear
    assert torch.equal(again.actor[0].weight, net[0].weight)
    torch.manual_seed(0)
    first = nn.Linear(77, 32)
    nn.init.orthogonal_(first.weight, 2 ** 0.5)
    torch.testing.assert_close(again.actor[0].weight, first.weight)


@pytest.mark.parametrize("width", [7, 77, 80])
def test_an_input_padded_once_is_read_as_padded(width):
    """PPO pads its observations once for every epoch (ActorCritic.inputs): the layer
    takes an input of its padded width as it is and computes what the raw input gives."""
    torch.manual_seed(width)
    layer = AlignedInput(width, 16)
    x = torch.randn(2, 33, width)
    padded = layer.pad(x)
    assert padded.shape == (2, 33, layer.width) and layer.width % AlignedInput.ALIGN == 0
    assert torch.equal(padded[..., :width], x) and not padded[..., width:].any()
    assert torch.equal(layer.padded(padded), layer.padded(x))  # the same bits


def test_a_policy_on_the_cpu_takes_its_observations_as_they_are():
    policy = FastCategoricalActorCritic(77, [3], [32, 32], shared=True, activation="relu")
    obs = torch.randn(5, 77)
    assert policy.inputs(obs) is obs  # nothing to pad for on the CPU
