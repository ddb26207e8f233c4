"""Speed only, behind the fast door (wd_teach.floors): how the continuous Tag game's observe
twin (observe_fast.cu, observe_fast_numba.py) is launched. env.py, which the lessons read,
names it in one line; what it is and why is here and in observe_fast.cu."""

from __future__ import annotations

from pathlib import Path

from wd_teach.env import MAX_THREADS_PER_BLOCK, FastKernel

#: The shared memory that observe_fast.cu (and its Numba twin) stages a block's rows in:
#: floats of observation and ints of `nearest`, the sizes both kernels declare.
FAST_STAGE_FLOATS = 10240
FAST_STAGE_INTS = 1536


def observe_twin(env) -> FastKernel:
    """The observe writes its rows through shared memory, a warp's rows as one run
    (observe_fast.cu says why): blocks of as many whole warps as the stage holds rows for,
    128 threads at 10 nearest; none (threads 0) where a warp's rows do not fit (a full
    observation of many agents), and the plain observe runs."""
    warps = min(FAST_STAGE_FLOATS // (32 * env.observation_space.shape[0]),
                FAST_STAGE_INTS // (32 * env.num_neighbors),
                -(-env.num_agents // 32), MAX_THREADS_PER_BLOCK // 32)
    return FastKernel(replaces="tag_continuous_observe", name="tag_continuous_observe_fast",
                      cuda=Path(__file__).with_name("observe_fast.cu"),
                      numba="observe_fast_numba", threads=32 * warps)
