"""The learning algorithms, one module each, read top to bottom: a config of
hyperparameters, the policy it trains, and a Learner whose `update(batch)` holds the loss.

They share the rollout (wd_teach/train/rollout.py), the helpers in common.py and the Learner base
in base.py; what differs between them is only how a batch of experience becomes a gradient
step. What each can do is one record, its CAPABILITIES (base.Capabilities), which is all
the trainer reads about it.

    a2c   advantage actor-critic: one gradient step per rollout
    ppo   proximal policy optimisation: several epochs of minibatches, a clipped ratio
    ddpg  deep deterministic policy gradient: continuous actions, a replay buffer and
          target networks, all on the device
"""

from wd_teach.train.algorithms import a2c, ddpg, ppo

ALGORITHMS = {"a2c": a2c, "ppo": ppo, "ddpg": ddpg}

__all__ = ["ALGORITHMS", "a2c", "ddpg", "ppo"]
