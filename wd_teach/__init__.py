"""wd_teach: end-to-end multi-agent reinforcement learning on a GPU, taught one layer at a time.

The floors, bottom up, each with its notebook:

    device   what this machine has, and which backend to use      (00_welcome)
    data     DataStore: named arrays that live on the device      (01_data_push)
    launch   KernelLauncher: CUDA C (PyCUDA) or Numba kernels      (02_kernel_launch)
    sampler  Sampler: every agent's action, drawn on the device   (03_sampler)
    reset    Resetter, EpisodeLog: done envs restart; a device log (04_reset_and_log)
    env      Env, EnvWrapper: environments stepped on the device  (05, 06)
    trainer  Trainer: shared policies, A2C/PPO/DDPG, a rollout that
             stays on the device, checkpoints                      (07_training)
    lightning TrainingModule: the same training in Lightning        (08_lightning)
    bench    run_bench: throughput against envs and agents;
             autoscale: how many envs fit the GPU                 (09_scaling_up)

`import wd_teach` works anywhere: without a GPU, Numba kernels run on the CUDA simulator and
PyCUDA says plainly that it needs a GPU when it is used.
"""

from wd_teach._simulator import choose_numba_target

choose_numba_target()

from wd_teach.data import DataStore  # noqa: E402
from wd_teach.device import (  # noqa: E402
    BACKENDS,
    choose_backend,
    default_device,
    discover,
    doctor,
    gpu_available,
)
from wd_teach.errors import (  # noqa: E402
    BenchError,
    CompileError,
    ConfigError,
    LaunchError,
    LogError,
    MissingPieceError,
    ProbabilityError,
    ResetError,
    SamplerError,
    StoreError,
    TrainError,
    WdTeachError,
)
from wd_teach.launch import KernelLauncher, launch_geometry  # noqa: E402
from wd_teach.reset.episode_log import EpisodeLog, plot_episode  # noqa: E402
from wd_teach.reset.reset import Resetter  # noqa: E402
from wd_teach.sampler.bench import bench_sampler  # noqa: E402
from wd_teach.sampler.sampler import Sampler  # noqa: E402
from wd_teach.sizes import lesson_sizes  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "BACKENDS",
    "BenchError",
    "CompileError",
    "ConfigError",
    "DataStore",
    "EpisodeLog",
    "KernelLauncher",
    "LaunchError",
    "LogError",
    "MissingPieceError",
    "ProbabilityError",
    "ResetError",
    "Resetter",
    "Sampler",
    "SamplerError",
    "StoreError",
    "TrainError",
    "WdTeachError",
    "bench_sampler",
    "choose_backend",
    "default_device",
    "discover",
    "doctor",
    "gpu_available",
    "launch_geometry",
    "lesson_sizes",
    "plot_episode",
]
