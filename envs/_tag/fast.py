"""Speed only, behind the fast door (wd_teach.floors): how a Tag game's observe twin (its
folder's observe_fast.cu and observe_fast_numba.py, on fast.cuh and fast_numba.py here) is
launched. Each game's env.py, which the lessons read, names its twin in one line; what a twin
is and why is here and in envs/tag_continuous/observe_fast.cu."""

from __future__ import annotations

from wd_teach.env import MAX_THREADS_PER_BLOCK, FastKernel

#: The shared memory a twin stages a block's rows in: floats of observation and ints of
#: `nearest`, the sizes fast.cuh and fast_numba.py declare.
FAST_STAGE_FLOATS = 10240
FAST_STAGE_INTS = 1536


def observe_twin(env, replaces: str) -> FastKernel:
    """The twin of the game's observe kernel `replaces`, named `replaces`_fast, in the game's
    folder. Each thread stages its row in shared memory and each warp writes its 32 rows as
    one run: blocks of as many whole warps as the stage holds rows for, 128 threads at 10
    nearest; none (threads 0) where a warp's rows do not fit (a full observation of many
    agents), and the plain observe runs."""
    warps = min(FAST_STAGE_FLOATS // (32 * env.observation_space.shape[0]),
                FAST_STAGE_INTS // (32 * env.num_neighbors),
                -(-env.num_agents // 32), MAX_THREADS_PER_BLOCK // 32)
    return FastKernel(replaces=replaces, name=f"{replaces}_fast",
                      cuda=env.folder / "observe_fast.cu", numba="observe_fast_numba",
                      threads=32 * warps)
