"""Every env on a GPU: the NumPy reference, Numba and PyCUDA from one start with one sequence
of actions, compared after every step (200 environments: many blocks, every game size the
lessons use; the benchmarks time larger ones). Tag and speaker_listener are built to agree bit
for bit; the classic-control envs within their stated tolerance.

Run: pytest tests/gpu/test_envs_gpu.py -v -s   (-s shows each consistency table)
"""

import inspect

import numpy as np
import pytest
import torch

from wd_teach.device import BACKENDS as KERNEL_BACKENDS
from wd_teach.device import NUMPY
from wd_teach.env.consistency import check_consistency
from wd_teach.env.wrapper import EnvWrapper, steps_per_second
from wd_teach.errors import EnvError
from wd_teach_envs.acrobot import Acrobot
from wd_teach_envs.cartpole import CartPole
from wd_teach_envs.mountain_car import MountainCar
from wd_teach_envs.mountain_car_continuous import MountainCarContinuous
from wd_teach_envs.pendulum import Pendulum
from wd_teach_envs.speaker_listener import SpeakerListener
from wd_teach_envs.tag_continuous import TagContinuous
from wd_teach_envs.tag_grid import TagGrid

BACKENDS = (NUMPY, *KERNEL_BACKENDS)  # the NumPy reference first
NUM_ENVS = 200

#: name: (env, steps, options). The benchmark game (10 taggers, 100 runners, 10 nearest),
#: and short games whose episodes end, and restart on the device, within the steps.
FULL = {
    "tag_continuous": (TagContinuous(), 12, {}),
    "tag_continuous_short_games": (TagContinuous(episode_length=5, tagging_distance=1.5), 12,
                                   {}),
    "tag_continuous_full_obs": (TagContinuous(num_nearest=None, episode_length=5), 8, {}),
    "tag_continuous_two_blocks": (TagContinuous(episode_length=5, tagging_distance=1.5), 8,
                                  {"max_threads": 64}),
    "tag_grid": (TagGrid(), 12, {}),
    "tag_grid_short_games": (TagGrid(grid_size=6, episode_length=8), 12, {}),
    "cartpole": (CartPole(), 40, {}),
    "pendulum": (Pendulum(episode_length=25), 40, {}),
    "acrobot": (Acrobot(episode_length=25), 40, {}),
    "mountain_car": (MountainCar(episode_length=25), 40, {}),
    "mountain_car_continuous": (MountainCarContinuous(episode_length=25), 40, {}),
    "speaker_listener": (SpeakerListener(), 40, {}),
}
#: The envs built to agree bit for bit: integer and grid arithmetic, exact divisions, no
#: transcendentals and no fused multiply-adds, so every backend rounds alike.
EXACT = [name for name in FULL if name.startswith("tag")] + ["speaker_listener"]


@pytest.mark.parametrize("name", FULL)
def test_every_backend_agrees_at_full_size(name):
    env, steps, options = FULL[name]
    report = check_consistency(env, BACKENDS, num_envs=NUM_ENVS, steps=steps, **options)
    print(report.table())
    assert report.ok, report.table()
    if name in EXACT:
        for backend in ("numba", "pycuda"):
            for array, largest in report.largest[backend].items():
                message = f"{backend} {array}: within tolerance, but not bit for bit"
                assert largest.max() == 0, f"{message}\n{report.table()}"


def test_tag_with_more_agents_than_a_block_holds():
    """1,110 agents: two blocks of 1,024 threads per environment, the second mostly idle."""
    env = TagContinuous(num_runners=1_100, episode_length=4, tagging_distance=1.0)
    report = check_consistency(env, BACKENDS, num_envs=4, steps=6)
    print(report.table())
    assert report.ok, report.table()


def test_numba_tag_kernels_never_fuse_multiply_adds():
    """What NVVM makes of the Numba twins: mul.rn, never fma, and no double precision."""
    from numba import cuda, types
    from numba.np import numpy_support

    for env in (TagContinuous(), TagGrid()):
        state = env.full_state(2)
        scalars = {"num_agents": env.num_agents, "episode_length": env.episode_length,
                   **env.constants()}
        module = env.numba_kernels()
        for name in env.step_kernels:
            kernel = getattr(module, name)
            signature = []
            for param in inspect.signature(kernel.py_func).parameters:
                if param in state:
                    data = state[param].data
                    signature.append(types.Array(numpy_support.from_dtype(data.dtype),
                                                 data.ndim, "C"))
                else:
                    is_int = isinstance(scalars[param], (int, np.integer))
                    signature.append(types.int32 if is_int else types.float32)
            ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(signature))
            assert "fma.rn.f32" not in ptx and ".f64" not in ptx, name


@pytest.mark.parametrize("backend", ["numba", "pycuda"])
def test_step_stays_on_the_device(backend):
    wrapper = EnvWrapper(TagContinuous(episode_length=3), NUM_ENVS, backend,
                         check_actions=False)
    actions = wrapper.random_actions()
    assert actions.is_cuda
    for _ in range(3):
        obs, rewards, done, info = wrapper.step(actions)
    assert obs.is_cuda and rewards.is_cuda and done.is_cuda and info["truncated"].is_cuda
    assert bool(done.all())  # time was up everywhere, and every env has started again
    assert int(wrapper.store["timestep"].sum()) == 0


def test_actions_written_in_place_are_not_copied():
    wrapper = EnvWrapper(TagGrid(episode_length=3), 10, "numba")
    wrapper.store["actions"].copy_(wrapper.random_actions())
    pointer = wrapper.store["actions"].data_ptr()
    wrapper.step(wrapper.store["actions"])
    assert wrapper.store["actions"].data_ptr() == pointer
    bad = torch.full_like(wrapper.store["actions"], 9)
    with pytest.raises(EnvError, match="action 9 of env 0, agent 0 is out of range"):
        wrapper.step(bad)


def test_a_store_that_cannot_fit_is_refused_before_anything_is_made(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2**20, 2**30))
    with pytest.raises(EnvError, match="need .* GiB on the GPU, but only 0.00 of 1.00 GiB"):
        EnvWrapper(TagContinuous(), NUM_ENVS, "numba")


@pytest.mark.parametrize("name", ["tag_continuous", "tag_grid", "cartpole", "pendulum"])
def test_throughput_table(name):
    """Not a pass/fail on time: prints env steps per second for each backend."""
    env, _, _ = FULL[name]
    line = [f"{name:>16} x {NUM_ENVS}:"]
    for backend in BACKENDS:
        wrapper = EnvWrapper(env, NUM_ENVS, backend, check_actions=False)
        rate = steps_per_second(wrapper, 3 if backend == "numpy" else 50)
        line.append(f"{backend} {rate:,.0f}/s")
        assert rate > 0
    print("  ".join(line))
