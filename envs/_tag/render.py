"""Pictures of a Tag game: one environment's episode recorded from the store, drawn as a
matplotlib animation (FuncAnimation(...).to_jshtml() plays it in a notebook, no ffmpeg)."""

from __future__ import annotations

import numpy as np
from matplotlib import animation
from matplotlib import pyplot as plt

TAGGER_COLOR = "tab:red"
RUNNER_COLOR = "tab:blue"
CAUGHT_COLOR = "0.8"


def record_episode(wrapper, steps: int, env: int = 0, policy=None) -> dict[str, np.ndarray]:
    """Step `wrapper` up to `steps` times (random actions unless `policy(obs)` gives them)
    and keep environment `env`'s positions and who is still playing, one row per frame,
    the start included. Stops at the end of the episode."""
    wrapper.reset()
    frames = {"loc_x": [], "loc_y": [], "in_game": []}

    def keep():
        for name in frames:
            frames[name].append(wrapper.store[name][env].cpu().numpy().copy())

    keep()
    for _ in range(steps):
        actions = policy(wrapper.obs) if policy is not None else wrapper.random_actions()
        _, _, done, _ = wrapper.step(actions)
        if bool(done[env]):
            break  # the reset has already put the next episode's start in the store
        keep()
    return {name: np.stack(rows) for name, rows in frames.items()}


def draw_frame(ax, frame: dict[str, np.ndarray], k: int, num_taggers: int,
               field_size: float, tagging_distance: float = 0.0):
    """Frame k on `ax`: taggers as red dots with their reach, runners blue, caught grey."""
    ax.clear()
    ax.set_xlim(-0.5, field_size + 0.5)
    ax.set_ylim(-0.5, field_size + 0.5)
    ax.set_aspect("equal")
    x, y, playing = frame["loc_x"][k], frame["loc_y"][k], frame["in_game"][k] != 0
    runner = np.arange(len(x)) >= num_taggers
    ax.scatter(x[runner & ~playing], y[runner & ~playing], s=12, c=CAUGHT_COLOR,
               label="caught")
    ax.scatter(x[runner & playing], y[runner & playing], s=18, c=RUNNER_COLOR, label="runner")
    ax.scatter(x[~runner], y[~runner], s=40, c=TAGGER_COLOR, marker="D", label="tagger")
    for tx, ty in zip(x[~runner], y[~runner], strict=True):
        if tagging_distance > 0:
            ax.add_patch(plt.Circle((tx, ty), tagging_distance, color=TAGGER_COLOR,
                                    fill=False, lw=0.8, alpha=0.6))
    left = int((runner & playing).sum())
    ax.set_title(f"step {k}: {left} of {int(runner.sum())} runners left")
    ax.legend(loc="upper right", fontsize=7)


def animate_episode(frame: dict[str, np.ndarray], num_taggers: int, field_size: float,
                    tagging_distance: float = 0.0, interval: int = 120):
    """A FuncAnimation of a recorded episode; `.to_jshtml()` makes it playable HTML."""
    fig, ax = plt.subplots(figsize=(5, 5))
    steps = len(frame["loc_x"])
    anim = animation.FuncAnimation(
        fig, lambda k: draw_frame(ax, frame, k, num_taggers, field_size, tagging_distance),
        frames=steps, interval=interval)
    plt.close(fig)  # the animation shows; the empty figure does not
    return anim


def draw_observation_layout(env, shown_slots: int = 2):
    """One agent's observation as a strip of labelled cells: its own block, then the first
    neighbour slots, '...', and the last slot."""
    from wd_teach_envs._tag.game import OWN_FEATURES, SLOT_FEATURES

    own = (*OWN_FEATURES, *env.game_features)
    slot = (*SLOT_FEATURES, *env.game_features)
    slots = list(range(min(shown_slots, env.num_neighbors)))
    if env.num_neighbors > shown_slots:
        slots += [None, env.num_neighbors - 1]
    blocks = [("own", own)] + [(f"slot {k}" if k is not None else "...", slot if k is not None
                                else ()) for k in slots]
    width = sum(max(len(features), 1) for _, features in blocks) + len(blocks)
    fig, ax = plt.subplots(figsize=(min(0.55 * width, 16), 2.2))
    x = 0
    for label, features in blocks:
        color = "tab:orange" if label == "own" else "tab:cyan"
        for f, name in enumerate(features):
            ax.add_patch(plt.Rectangle((x + f, 0), 1, 1, facecolor=color, edgecolor="k",
                                       alpha=0.5))
            ax.text(x + f + 0.5, 0.5, name, rotation=90, ha="center", va="center", fontsize=7)
        span = max(len(features), 1)
        ax.text(x + span / 2, 1.15, label, ha="center", fontsize=9)
        x += span + 1
    ax.set_xlim(-0.5, x)
    ax.set_ylim(-0.2, 1.5)
    ax.axis("off")
    slots_are = "nearest first" if env.config.num_nearest else "every other agent by index"
    ax.set_title(f"one agent's observation: {env.observation_space.shape[0]} floats "
                 f"({env.own_size} own, then {env.num_neighbors} slots of {env.own_size}, "
                 f"{slots_are})", fontsize=9)
    return fig
