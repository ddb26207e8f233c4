"""A categorical policy's heads: one log-softmax for heads of one size, per head otherwise;
log-probabilities, entropies and probabilities as torch.distributions gives them."""

import pytest
import torch
from torch.distributions import Categorical

from wd_teach.train.policy import CategoricalActorCritic


@pytest.mark.parametrize("counts", [[6, 6], [5, 7], [4], [3, 3, 3]])
def test_heads_are_independent_categoricals(counts):
    torch.manual_seed(len(counts))
    policy = CategoricalActorCritic(10, counts, [16])
    logits = torch.randn(2, 9, sum(counts)) * 3
    actions = torch.stack([torch.randint(0, n, (2, 9)) for n in counts], dim=-1)
    heads = [Categorical(logits=h) for h in logits.split(counts, dim=-1)]
    want_log_prob = sum(d.log_prob(actions[..., i]) for i, d in enumerate(heads))
    want_entropy = sum(d.entropy() for d in heads)
    torch.testing.assert_close(policy.log_prob(logits, actions), want_log_prob)
    torch.testing.assert_close(policy.entropy(logits), want_entropy)
    probs = policy.probabilities(logits)
    torch.testing.assert_close(probs, torch.cat([d.probs for d in heads], dim=-1))
    # evaluate works each head's log-softmax out once, for both of its answers
    obs = torch.randn(4, 10)
    log_prob, entropy, value = policy.evaluate(obs, actions[0, :4])
    again = policy.actor(policy.body(obs))
    torch.testing.assert_close(log_prob, policy.log_prob(again, actions[0, :4]))
    torch.testing.assert_close(entropy, policy.entropy(again))
    assert value.shape == (4,)
