"""A policy's actor and critic as two networks (the default) or as one shared body with two
output layers (policies.NAME.shared, WarpDrive's model shape), with tanh or ReLU layers."""

import pytest
import torch
from gymnasium import spaces
from torch import nn

from wd_teach.errors import ConfigError, TrainError
from wd_teach.train.config import load_config
from wd_teach.train.policy import make_policy
from wd_teach.train.trainer import Trainer

TAG = spaces.MultiDiscrete([3, 5])
SMALL = ["env.num_envs=4", "trainer.steps=8", "algorithm.num_minibatches=2"]


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("space", [TAG, spaces.Box(-1.0, 1.0, (2,))])
def test_a_shared_body_runs_the_hidden_layers_once_for_both_heads(space):
    torch.manual_seed(0)
    separate = make_policy("stochastic", 12, space, [32, 32])
    shared = make_policy("stochastic", 12, space, [32, 32], shared=True)
    hidden = 12 * 32 + 32 + 32 * 32 + 32
    assert count(separate) - count(shared) == hidden  # one set of hidden layers less
    obs = torch.randn(6, 12)
    out, value = shared.actor_and_value(obs)
    features = shared.body(obs)
    torch.testing.assert_close(out, shared.actor(features))
    torch.testing.assert_close(value, shared.critic(features).squeeze(-1))
    torch.testing.assert_close(value, shared.value(obs))
    # the value loss alone moves the shared body; with two networks it leaves the actor be
    shared.value(obs).sum().backward()
    assert shared.body[0].weight.grad.abs().sum() > 0
    separate.value(obs).sum().backward()
    assert separate.actor[0].weight.grad is None


def test_the_activation_is_the_one_named():
    relu = make_policy("stochastic", 8, TAG, [16], activation="relu")
    tanh = make_policy("stochastic", 8, TAG, [16])
    assert isinstance(relu.actor[1], nn.ReLU) and isinstance(tanh.actor[1], nn.Tanh)
    shared = make_policy("stochastic", 8, TAG, [16, 16], shared=True, activation="relu")
    assert [type(m) for m in shared.body][1::2] == [nn.ReLU, nn.ReLU]


def test_a_shared_body_trains_and_its_checkpoint_comes_back(tmp_path):
    sets = [*SMALL, "policies.cart.shared=true", "policies.cart.activation=relu"]
    trainer = Trainer("cartpole", gpu=False, sets=sets)
    before = [p.detach().clone() for p in trainer.policies["cart"].body.parameters()]
    trainer.train(2, progress=False)
    after = list(trainer.policies["cart"].body.parameters())
    assert all(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert all(torch.isfinite(torch.tensor(v)) for k, v in trainer.history[-1].items()
               if k.endswith("loss"))
    again = Trainer.from_checkpoint(trainer.save(tmp_path / "shared.safetensors"), gpu=False)
    assert again.config.policies["cart"].shared is True
    for want, got in zip(trainer.policies["cart"].parameters(),
                         again.policies["cart"].parameters(), strict=True):
        assert torch.equal(want, got)


@pytest.mark.parametrize(("sets", "message"), [
    (["policies.cart.activation=sigmoid"], "activation must be one of tanh, relu"),
    (["policies.cart.shared=3"], "shared must be true or false"),
])
def test_a_bad_body_is_refused_by_name(sets, message):
    with pytest.raises(ConfigError, match=message):
        load_config("cartpole", sets=sets, gpu=False)


def test_ddpg_refuses_a_shared_body():
    with pytest.raises(ConfigError, match="shares no body"):
        Trainer("pendulum", gpu=False, sets=["algorithm.name=ddpg",
                                              "policies.pendulum.shared=true"])


def test_a_two_network_checkpoint_into_tags_shared_default_names_the_setting(tmp_path):
    """Tag's config gives each policy one shared body; a run of two networks does not load
    into it, and the error names the settings that differ, not only the tensors."""
    small = ["env.num_envs=2", "trainer.steps=4", "env.params.num_taggers=1",
             "env.params.num_runners=2", "env.params.num_nearest=2"]
    two = Trainer("tag_continuous", gpu=False,
                  sets=[*small, "policies.taggers.shared=false", "policies.runners.shared=false"])
    path = two.save(tmp_path / "two.safetensors")
    shared = Trainer("tag_continuous", gpu=False, sets=small)
    assert shared.config.policies["taggers"].shared  # the config's default
    with pytest.raises(TrainError, match=r"policies\.(taggers|runners)\.hidden, \.shared or "
                                         r"\.activation"):
        shared.load(path)
