"""The Numba twin of row_writes.cu, line for line: an observation's writes alone, four ways
(that file says why). Numba is handed obs as the store holds it, [env, agent, feature]: the
same addresses as the CUDA C's flat index. Barriers are cuda.syncthreads, which the
simulator runs too."""

from numba import cuda, float32

from wd_teach.env import agent_id, env_id

CHUNK = 8  # floats of its row a lane stages at a time
PITCH = 9  # a lane's stride in the stage: no two lanes share a bank
STAGE = 32 * 32 * 9  # ROWS_MAX_WARPS x 32 lanes x PITCH
WARP_FLOATS = 4 * 32 * 77  # rows_warp's stage: 128 threads' rows of 77 floats


@cuda.jit(device=True)
def row_value(i, f):
    return float32((i * 31 + f * 7) & 1023)


@cuda.jit
def rows_own(obs, num_agents, obs_size):
    env = env_id()
    agent = agent_id()
    if agent >= num_agents:
        return
    i = env * num_agents + agent
    for f in range(obs_size):
        obs[env, agent, f] = row_value(i, f)


@cuda.jit
def rows_staged(obs, num_agents, obs_size):
    stage = cuda.shared.array(STAGE, float32)
    env = env_id()
    agent = agent_id()
    lane = cuda.threadIdx.x % 32
    warp = cuda.threadIdx.x // 32
    live = min(32, cuda.blockDim.x - warp * 32)
    first = agent - lane
    mine = warp * 32 * PITCH
    for start in range(0, obs_size, CHUNK):
        width = min(CHUNK, obs_size - start)
        if agent < num_agents:
            i = env * num_agents + agent
            for c in range(width):
                stage[mine + lane * PITCH + c] = row_value(i, start + c)
        cuda.syncthreads()
        for e in range(lane, live * width, live):  # a short last warp: its lanes only
            row = e // width
            c = e % width
            if first + row < num_agents:
                obs[env, first + row, start + c] = stage[mine + row * PITCH + c]
        cuda.syncthreads()


@cuda.jit
def rows_flat(obs, num_agents, obs_size):
    env = env_id()
    first = cuda.blockIdx.y * cuda.blockDim.x
    count = min(cuda.blockDim.x, num_agents - first)
    if count <= 0:
        return
    for e in range(cuda.threadIdx.x, count * obs_size, cuda.blockDim.x):
        row = first + e // obs_size
        obs[env, row, e % obs_size] = row_value(env * num_agents + row, e % obs_size)


@cuda.jit
def rows_warp(obs, num_agents, obs_size):
    stage = cuda.shared.array(WARP_FLOATS, float32)
    if cuda.blockDim.x * obs_size > WARP_FLOATS:
        return
    env = env_id()
    agent = agent_id()
    lane = cuda.threadIdx.x % 32
    first = agent - lane
    live = min(32, cuda.blockDim.x - (cuda.threadIdx.x // 32) * 32)
    rows = max(0, min(live, num_agents - first))  # a lane's, and only agents there are
    mine = (cuda.threadIdx.x // 32) * 32 * obs_size
    if agent < num_agents:
        i = env * num_agents + agent
        for f in range(obs_size):
            stage[mine + lane * obs_size + f] = row_value(i, f)
    cuda.syncthreads()
    for e in range(lane, rows * obs_size, live):  # a short warp too
        obs[env, first + e // obs_size, e % obs_size] = stage[mine + e]
