"""The one place notebooks and tests take their sizes from.

On a GPU a lesson runs at the size that shows why GPUs win; on the CUDA simulator every
CUDA thread is a Python thread, so the same lesson runs small and quick.
"""

from __future__ import annotations

from dataclasses import dataclass

from wd_teach.device import gpu_available


@dataclass(frozen=True)
class LessonSizes:
    num_envs: int
    num_agents: int
    episode_length: int
    num_actions: int

    @property
    def agent_slots(self) -> int:
        return self.num_envs * self.num_agents


#: Full size: enough blocks to fill a large GPU many times over.
GPU_SIZES = LessonSizes(num_envs=2_000, num_agents=256, episode_length=100, num_actions=10)
#: Simulator size: a few blocks of a few threads, still more than one of each.
CPU_SIZES = LessonSizes(num_envs=3, num_agents=4, episode_length=5, num_actions=3)


def lesson_sizes(gpu: bool | None = None) -> LessonSizes:
    """Full sizes on a GPU, small ones on the CPU. Pass `gpu` to ask for one or the other."""
    return GPU_SIZES if (gpu_available() if gpu is None else gpu) else CPU_SIZES
