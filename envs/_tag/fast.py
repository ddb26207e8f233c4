"""Speed only, behind the fast door (wd_teach.floors), for the Tag games: how a game's observe
twin (its folder's observe_fast.cu and observe_fast_numba.py, on fast.cuh and fast_numba.py
here) is launched, and the initial state's neighbours found on the GPU. Each game's env.py,
which the lessons read, names its twin in one line; what a twin is and why is here and in
envs/tag_continuous/observe_fast.cu."""

from __future__ import annotations

import numpy as np

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


#: Distances a slice of envs holds at once on a GPU (four bytes each, and an eight-byte key):
#: about 0.8 GB, where tag_reference.TABLE_SIZE sizes the CPU's slices.
GPU_TABLE_SIZE = 1 << 26


def initial_neighbors(loc_x, loc_y, in_game, num_neighbors: int, device="cuda"):
    """tag_reference.neighbors (a game that sees its nearest, not every agent), for the
    initial state, which game.py makes on the host before any kernel runs: the same slots,
    bit for bit, found with torch on `device`. The same steps as the reference's `nearest`:
    each distance a float32 product and sum (no fused multiply-add: torch's elementwise
    kernels round each), one int64 key an entry (the distance's bits above the agent's
    index), and the smallest keys, in order (topk).

    What it is for: at 2,000 envs of 1,000 agents the reference compares 2e9 pairs in NumPy
    on one core (54 s on a 2-core CPU, bench/NOTES.md) before the first step of every run and
    every benchmark at that size. game.py calls it where torch sees a GPU; on the CPU torch
    was no faster than NumPy (3.5 s against 2.9 s at 200 envs of 1,000 agents, 2 cores)."""
    import torch

    device = torch.device(device)
    if device.type == "cpu":
        from wd_teach_envs._tag.tag_reference import TABLE_SIZE as table
    else:
        table = GPU_TABLE_SIZE
    num_envs, num_agents = loc_x.shape
    slots = np.empty((num_envs, num_agents, num_neighbors), np.int64)
    step = max(1, table // (num_agents * num_agents))
    index = torch.arange(num_agents, device=device)
    alone = torch.eye(num_agents, dtype=torch.bool, device=device)
    for start in range(0, num_envs, step):
        part = slice(start, start + step)
        x, y, playing = (torch.as_tensor(np.ascontiguousarray(a[part]), device=device)
                         for a in (loc_x, loc_y, in_game))
        dx = x[:, None, :] - x[:, :, None]  # [env, agent, other]: other minus me
        dy = y[:, None, :] - y[:, :, None]
        d2 = torch.where((playing[:, None, :] == 0) | alone, torch.inf, dx * dx + dy * dy)
        keys = (d2.view(torch.int32).to(torch.int64) << 32) | index
        order = torch.topk(keys, num_neighbors, dim=-1, largest=False).values & 0xFFFFFFFF
        found = torch.where(torch.gather(d2, 2, order) < torch.inf, order, -1)
        slots[part] = found.cpu().numpy()
    return slots
