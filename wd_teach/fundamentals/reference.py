"""What lesson 10's kernels must compute, in NumPy: the answers the checkers compare with."""

import numpy as np

GRAVITY = np.float32(9.8)
POLE_HALF_LENGTH = np.float32(0.5)


def sum_rows(probs: np.ndarray) -> np.ndarray:
    """Each row's total: what sum_rows gives for `probs` [rows, actions], and sum_columns for
    its transpose [actions, rows]."""
    return probs.sum(axis=1, dtype=np.float32)


def transpose(src: np.ndarray) -> np.ndarray:
    """[rows, cols] -> [cols, rows], as every transpose kernel must give."""
    return np.ascontiguousarray(src.T)


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Each row's softmax: logits [rows, actions] -> probabilities [rows, actions]."""
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)


def push_carts(state: np.ndarray, dt: float) -> np.ndarray:
    """One fall of every cart-pole: state [envs, 4] (x, x_dot, theta, theta_dot)."""
    dt = np.float32(dt)
    x, x_dot, theta, theta_dot = (state[:, k] for k in range(4))
    return np.stack([x + dt * x_dot, x_dot, theta + dt * theta_dot,
                     theta_dot + dt * GRAVITY * np.sin(theta) / POLE_HALF_LENGTH],
                    axis=1).astype(np.float32)
