"""wd_teach: end-to-end multi-agent reinforcement learning on a GPU, taught one layer at a time.

The floors, bottom up, each with its notebook; a layer is a folder and imports only below it
(tests/test_layers.py checks every import):

    device.py data.py launch.py cuda_c.py ...  the floor: machine, DataStore (01),
                                   KernelLauncher (02), CUDA C; cuda/ holds the shared header
    backends/ PyCUDA, Numba, NumPy: one object each, chosen once and asked, never compared
    rng/      Philox random numbers on the device                      (03_sampler)
    sampler/  Sampler: every agent's action, drawn on the device       (03_sampler)
    reset/    Resetter, EpisodeLog: done envs restart; a device log    (04_reset_and_log)
    env/      Env, EnvWrapper: environments stepped on the device      (05, 06)
    train/    Trainer: shared policies, A2C/PPO/DDPG, a rollout that stays on the device,
              checkpoints (07_training); lightning.py: the same in Lightning (08_lightning)
    scale/    run_bench, autoscale, distributed: throughput, envs that fit, GPUs (09)

Beside the layers, lessons/ holds what the notebooks need around them (the Colab set-up,
lesson sizes, code shown by name, pictures, the first kernel); it imports only the floor.
An env folder takes all it needs from wd_teach.env (its __all__ is the env author's API).

One convention for twins, the same in every folder that holds kernels. A layer folder's
CUDA C is `kernels.cu` (`kernels.cuh` for a header-only layer such as rng/), its Numba twin
`kernels_numba.py`, its NumPy twin `reference.py`; the public class sits beside them
(sampler/sampler.py, reset/reset.py). An env folder (envs/, or a learner's own) keeps
`env.py`, `step.cu`, `step_numba.py` and `reference.py`. The twins take the same parameters
in the same order (tests/test_twins.py checks every folder).

`import wd_teach` works anywhere: without a GPU, Numba kernels run on the CUDA simulator and
PyCUDA says plainly that it needs a GPU when it is used.
"""

from wd_teach._simulator import choose_numba_target
from wd_teach._watch import watch_from_environment

choose_numba_target()
watch_from_environment()  # only under the GPU check: where each process waits

from wd_teach.backends import kernel_backends  # noqa: E402
from wd_teach.data import DataStore  # noqa: E402
from wd_teach.device import (  # noqa: E402
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
from wd_teach.lessons.sizes import lesson_sizes  # noqa: E402
from wd_teach.reset.episode_log import EpisodeLog, plot_episode  # noqa: E402
from wd_teach.reset.reset import Resetter  # noqa: E402
from wd_teach.sampler.bench import bench_sampler  # noqa: E402
from wd_teach.sampler.sampler import Sampler  # noqa: E402

__version__ = "0.1.0"
#: The backends that run kernels, best first (the one list is wd_teach.backends.ALL).
BACKENDS = kernel_backends()


def __getattr__(name: str):
    """`wd_teach.Trainer` without importing the training layer on `import wd_teach`."""
    if name == "Trainer":
        from wd_teach.train.trainer import Trainer

        return Trainer
    raise AttributeError(f"module 'wd_teach' has no attribute {name!r}")


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
