"""The one place notebooks and tests take their sizes from.

On a GPU a lesson runs at the size that shows why GPUs win; on the CUDA simulator every
CUDA thread is a Python thread, so the same lesson runs small and quick.

`WD_TEACH_SIZES=small` (or `full`) overrides the choice: the test suite runs small on a GPU
too, where its point is that the GPU path works, not how fast it is (full sizes belong to
the notebooks and the benchmarks).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from wd_teach.device import gpu_available
from wd_teach.errors import WdTeachError

#: The environment variable that picks the sizes by hand.
SIZES_VARIABLE = "WD_TEACH_SIZES"


@dataclass(frozen=True)
class LessonSizes:
    num_envs: int
    num_agents: int
    episode_length: int
    num_actions: int
    #: Action heads of the several-heads (MultiDiscrete) examples: acceleration and turn, say.
    num_heads: int = 2
    #: Sampler launches whose draws make a histogram (each launch: one draw per agent).
    sample_launches: int = 1
    #: Tag (06): taggers, runners and neighbours seen per agent where the kernels run.
    tag_taggers: int = 10
    tag_runners: int = 100
    tag_nearest: int = 10
    #: Tag (06): the game drawn frame by frame (NumPy reference, one environment).
    animation_taggers: int = 5
    animation_runners: int = 50
    animation_frames: int = 100
    #: Envs of a consistency check that runs the NumPy reference beside the kernels (06):
    #: many blocks on a GPU, without waiting a minute for NumPy's nearest-neighbour search.
    consistency_envs: int = 200
    #: Env steps that a throughput measurement times (05, 06).
    timed_steps: int = 50
    #: Training (07, 08): CartPole iterations, and the Tag game trained for the animation.
    train_iterations: int = 50
    tag_train_envs: int = 100
    tag_train_iterations: int = 200
    #: Iterations the Lightning module runs, and that its overhead is timed over (08).
    lightning_iterations: int = 20
    #: Throughput sweeps (09): numbers of envs and of agents per env for the env step and
    #: the sampler, and the envs of the rollout and end-to-end training measurements.
    bench_envs: tuple[int, ...] = (1, 10, 100, 1_000, 10_000)
    bench_agents: tuple[int, ...] = (10, 110, 1_000)
    bench_train_envs: tuple[int, ...] = (100, 500)
    #: The game the benchmarks measure unless told another (a name or an env folder): the
    #: one WarpDrive's paper measures, 10 taggers chasing 100 runners.
    bench_env: str = "tag_continuous"
    #: Multi-agent RL (11): a small Tag game (taggers, runners, neighbours seen, episode
    #: length), trained over `marl_seeds` seeds of each kind for `marl_iterations`
    #: iterations of `marl_envs` envs, and played against random opponents in
    #: `marl_eval_envs` fresh envs.
    marl_taggers: int = 3
    marl_runners: int = 12
    marl_nearest: int = 5
    marl_episode_length: int = 100
    marl_envs: int = 200
    marl_iterations: int = 100
    marl_seeds: int = 5
    marl_eval_envs: int = 200

    @property
    def agent_slots(self) -> int:
        return self.num_envs * self.num_agents


#: Full size: enough blocks to fill a large GPU many times over.
GPU_SIZES = LessonSizes(num_envs=2_000, num_agents=256, episode_length=100, num_actions=10,
                        num_heads=2, sample_launches=10, tag_taggers=10, tag_runners=100,
                        tag_nearest=10, animation_taggers=5, animation_runners=50,
                        animation_frames=120, consistency_envs=200, timed_steps=100,
                        train_iterations=50,
                        tag_train_envs=100, tag_train_iterations=200, lightning_iterations=20,
                        bench_envs=(1, 10, 100, 1_000, 10_000), bench_agents=(10, 110, 1_000),
                        bench_train_envs=(100, 500))
#: Simulator size: a few blocks of a few threads, still more than one of each.
CPU_SIZES = LessonSizes(num_envs=3, num_agents=4, episode_length=5, num_actions=3,
                        num_heads=2, sample_launches=60, tag_taggers=2, tag_runners=5,
                        tag_nearest=3, animation_taggers=3, animation_runners=24,
                        animation_frames=40, consistency_envs=3, timed_steps=2,
                        train_iterations=12,
                        tag_train_envs=4, tag_train_iterations=15, lightning_iterations=5,
                        bench_envs=(1, 3), bench_agents=(4, 7), bench_train_envs=(2, 4),
                        marl_taggers=2, marl_runners=5, marl_nearest=3, marl_episode_length=20,
                        marl_envs=4, marl_iterations=6, marl_seeds=3, marl_eval_envs=8)


def lesson_sizes(gpu: bool | None = None) -> LessonSizes:
    """Full sizes on a GPU, small ones on the CPU. Pass `gpu` to ask for one or the other;
    without it, WD_TEACH_SIZES=small|full decides where it is set."""
    if gpu is None:
        choice = os.environ.get(SIZES_VARIABLE, "").strip().lower()
        if choice not in ("", "small", "full"):
            raise WdTeachError(f"{SIZES_VARIABLE}={choice!r}: use 'small' or 'full', or unset "
                               "it for full sizes on a GPU and small ones on a CPU.")
        gpu = gpu_available() if not choice else choice == "full"
    return GPU_SIZES if gpu else CPU_SIZES
