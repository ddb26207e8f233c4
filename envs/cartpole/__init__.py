"""CartPole: gymnasium's CartPole-v1, one cart per environment."""

from wd_teach_envs.cartpole.env import CartPole, CartPoleConfig

__all__ = ["CartPole", "CartPoleConfig"]
