"""Speaker and listener: one agent knows the goal, the other can reach it.

Two agents per environment, of two roles that see different things. Five landmarks lie on a
grid; one of them is the goal. The **speaker** (agent 0) sees only which landmark is the
goal, and says one of five words each step. The **listener** (agent 1) sees the grid (its
own cell, where each landmark is from it) and the word the speaker said last, and moves:
stay, up, down, left or right. Both get the same reward each step: minus the listener's
distance to the goal (in cells, divided by twice the grid's side), so 0 is the best a step
can give. Neither can score alone: the listener does not know which landmark is the goal,
and the speaker cannot move. A shared language has to be learned (after MPE's
simple_speaker_listener, Lowe et al., 2017, on a grid).

The roles' observations differ in size, and each role's policy reads its own:

    speaker   5 numbers: the goal as a one-hot over the landmarks
    listener  17 numbers: its x and y, each landmark's dx and dy from it (all divided by the
              side less one), and the speaker's last word as a one-hot (zeros before the
              first word)

The store's `obs` is [envs, 2, 17]; the speaker's row uses its first 5 columns. Both roles
choose from five actions, which mean words to the speaker and moves to the listener.

Two kernels a step, because the listener's observation holds the word the speaker says in
the same step: `speaker_listener_act` (the word, the move, the clock), then
`speaker_listener_observe` (both observations and the reward), which reads what the first
wrote in every thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from wd_teach.env import OBS, Env, StateArray, require

#: Landmarks on the grid, and so words the speaker has (and moves the listener has).
NUM_LANDMARKS = 5
SPEAKER, LISTENER = 0, 1
#: stay, up, down, left, right
MOVE_X = (0, 0, 0, -1, 1)
MOVE_Y = (0, 1, -1, 0, 0)
SPEAKER_OBS = NUM_LANDMARKS
LISTENER_OBS = 2 + 2 * NUM_LANDMARKS + NUM_LANDMARKS


@dataclass(frozen=True)
class SpeakerListenerConfig:
    grid_size: int = 8  # cells along each side
    episode_length: int = 25

    def validate(self) -> None:
        require(isinstance(self.grid_size, int) and self.grid_size >= 2,
                f"grid_size must be a whole number of at least 2 cells, got {self.grid_size!r}.")
        require(isinstance(self.episode_length, int) and self.episode_length >= 1,
                f"episode_length must be at least 1, got {self.episode_length!r}.")


class SpeakerListener(Env):
    Config = SpeakerListenerConfig
    step_kernels = ("speaker_listener_act", "speaker_listener_observe")

    @property
    def num_agents(self) -> int:
        return 2

    def agent_roles(self) -> dict[str, list[int]]:
        return {"speaker": [SPEAKER], "listener": [LISTENER]}

    @property
    def observation_space(self) -> spaces.Box:
        """The widest role's: the listener's. The speaker's is role_observation_spaces'."""
        return spaces.Box(-1.0, 1.0, (LISTENER_OBS,), np.float32)

    def role_observation_spaces(self) -> dict[str, spaces.Box]:
        return {"speaker": spaces.Box(0.0, 1.0, (SPEAKER_OBS,), np.float32),
                "listener": self.observation_space}

    @property
    def global_state_size(self) -> int:
        return SPEAKER_OBS + LISTENER_OBS

    def global_state(self, store):
        """What both see, side by side: the goal, and the listener's view with the word. A
        centralized critic (trainer.critic: centralized) reads it, and so can tell the
        speaker whether its word led the listener towards the goal."""
        import torch

        obs = store[OBS]
        return torch.cat([obs[:, SPEAKER, :SPEAKER_OBS], obs[:, LISTENER]], dim=1)

    @property
    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(NUM_LANDMARKS)  # a word, or a move (stay, up, down, left, right)

    def initial_state(self, num_envs, rng):
        from wd_teach_envs.speaker_listener.reference import observe

        cells = self.config.grid_size
        state = {
            "landmark_x": rng.integers(0, cells, (num_envs, NUM_LANDMARKS)).astype(np.int32),
            "landmark_y": rng.integers(0, cells, (num_envs, NUM_LANDMARKS)).astype(np.int32),
            "goal": rng.integers(0, NUM_LANDMARKS, num_envs).astype(np.int32),
            "listener_x": rng.integers(0, cells, num_envs).astype(np.int32),
            "listener_y": rng.integers(0, cells, num_envs).astype(np.int32),
            "word": np.full(num_envs, -1, np.int32),  # nothing said yet
        }
        obs = np.zeros((num_envs, 2, LISTENER_OBS), np.float32)
        rewards = np.zeros((num_envs, 2), np.float32)
        observe(**state, obs=obs, rewards=rewards, **self._scales())
        arrays = {name: StateArray(value, per="env") for name, value in state.items()}
        arrays["move_x"] = StateArray(np.array(MOVE_X, np.int32), per="shared", reset=False)
        arrays["move_y"] = StateArray(np.array(MOVE_Y, np.int32), per="shared", reset=False)
        arrays[OBS] = StateArray(obs)
        return arrays

    def _scales(self) -> dict[str, float]:
        side = self.config.grid_size - 1
        return {"cell_scale": np.float32(side), "reward_scale": np.float32(2 * side)}

    def constants(self):
        return {"grid_size": self.config.grid_size,
                **{name: float(value) for name, value in self._scales().items()}}

    def frame_arrays(self) -> list[str]:
        return ["landmark_x", "landmark_y", "goal", "listener_x", "listener_y", "word"]

    def draw_frame(self, ax, frames, k: int) -> None:
        """The landmarks (the goal ringed), the listener, and the word just said."""
        side = self.config.grid_size
        ax.clear()
        ax.set(xlim=(-0.5, side - 0.5), ylim=(-0.5, side - 0.5), aspect="equal",
               xticks=[], yticks=[])
        lx, ly, goal = frames["landmark_x"][k], frames["landmark_y"][k], int(frames["goal"][k])
        colours = [f"C{j}" for j in range(NUM_LANDMARKS)]
        ax.scatter(lx, ly, s=160, c=colours, marker="s")
        ax.scatter([lx[goal]], [ly[goal]], s=420, facecolors="none", edgecolors="k", lw=2)
        ax.scatter([frames["listener_x"][k]], [frames["listener_y"][k]], s=120, c="k")
        word = int(frames["word"][k])
        said = "nothing yet" if word < 0 else f"word {word}"
        ax.set_title(f"step {k}: the speaker said {said}")
