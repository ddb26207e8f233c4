// nearest.cu: the nearest-neighbour search of the Tag games by itself, two ways, so that
// they can be held equal and timed apart (issue 34: the seed's 2,000 envs of 1,000 agents).
//
//   tag_nearest_tiles  what the observe kernels do today (tag_find_nearest in tag.cuh):
//                      every agent compares itself with every other, staged through
//                      shared-memory tiles. 999 pairs an agent at 1,000 agents.
//   tag_nearest_grid   speed only; a game made with search="grid" launches it just before
//                      its observe kernel, which reads its slots instead of calling
//                      tag_find_nearest (envs/_tag/game.py). The block counts its env's
//                      agents still in the game, sizes a square grid of cells for about two
//                      a cell, sorts them into it in shared memory (a counting sort), and
//                      each agent searches the cells
//                      around its own, ring by ring, until nothing outside can be nearer
//                      than its last slot: a few dozen pairs an agent, not 999. Each warp
//                      then writes its agents' slots as one run of memory (step 5). With
//                      grid_by_cell (the games' setting) the threads take the agents cell
//                      by cell, so that a warp's lanes search the same few cells, and each
//                      row is written to its own agent's (bench/NOTES.md: "The grid search
//                      by cell, measured").
//
// Both write nearest[env, agent, k] (-1: no one): the same slots as tag_reference.neighbors,
// nearest first and the lower index first among equals, bit for bit. The Numba twin, line
// for line but for the grid search's walk (below), is nearest_numba.py; bench/nearest.py
// launches either and checks its input.
//
// Why the grid: measured on an H200 (bench/NOTES.md, "The seed's headline size"), the step at
// 2,000 x 1,000 takes 9.1 ms, ten times what the instruction count of 999 pairs an agent
// predicts. The insertion into the sorted slots should be much of it, by a count (not yet a
// profile): one lane of a warp that inserts makes the whole warp wait through the 16
// unrolled slots, and in a warp of 32 agents some lane inserts at about 540 of the 999
// others (random positions). The grid cuts both: fewer pairs, and so fewer insertions.
#include "fast.cuh"
#include "tag.cuh"

#define TAG_GRID_MAX_AGENTS 2048  // the most agents of one env the grid holds
#define TAG_GRID_MAX_SIDE 32      // the most cells along a side: 1,024 cells
// grid_by_cell: each cell's count holds two, the agents in the game below this bit and
// every agent above it (at most TAG_GRID_MAX_AGENTS of each, so neither reaches the other)
#define TAG_GRID_EVERY 0x10000
#define TAG_GRID_PLAYING 0xFFFF

// One thread per agent: its num_nearest nearest by tag_find_nearest, written out.
extern "C" __global__ void __launch_bounds__(TAG_MAX_THREADS)
    tag_nearest_tiles(const float* loc_x, const float* loc_y, const int* in_game, int* nearest,
                      int num_agents, int num_nearest) {
  __shared__ float tile_x[TAG_TILE];
  __shared__ float tile_y[TAG_TILE];
  __shared__ int tile_in[TAG_TILE];
  int found[TAG_MAX_NEAREST];
  const int env = wd_env_id();
  const int agent = wd_agent_id();
  const bool active = agent < num_agents;
  tag_find_nearest(loc_x, loc_y, in_game, env, agent, active, num_agents, num_nearest, tile_x,
                   tile_y, tile_in, found);
  if (!active) return;
  int* out = nearest + (long long)wd_slot(env, agent, num_agents) * num_nearest;
#pragma unroll
  for (int k = 0; k < TAG_MAX_NEAREST; ++k) {
    if (k < num_nearest) out[k] = found[k];
  }
}

// The grid meets agents cell by cell, not in index order, so a tie must be settled by index
// here (tag_keep_nearest keeps the first of equals because its agents come in index order).
// One 64-bit key per agent does both, as tag_reference.smallest_first does: the distance's
// bits above the agent's index. A distance is a float of at least 0, whose bits, read as an
// unsigned integer, order as the floats do; so keys order by distance, then by index.
#define TAG_NO_ONE 0xFFFFFFFFFFFFFFFFull  // an empty slot: after every key

__device__ __forceinline__ unsigned long long tag_key(float d2, int other) {
  return ((unsigned long long)__float_as_uint(d2) << 32) | (unsigned int)other;
}

// tag_keep_nearest with keys: the newcomer takes the first slot with a larger key, and from
// there each slot takes the one before it. Returns the key now in the last slot.
__device__ __forceinline__ unsigned long long tag_keep_nearest_keys(unsigned long long key,
                                                                    unsigned long long* best,
                                                                    int num_nearest) {
  bool moving = false;
  unsigned long long last = key;
#pragma unroll
  for (int k = 0; k < TAG_MAX_NEAREST; ++k) {
    if (k < num_nearest && (moving || key < best[k])) {
      const unsigned long long b = best[k];
      best[k] = key;
      key = b;
      moving = true;
    }
    // k + 1 == num_nearest, not k == num_nearest - 1: the other way round nvcc turns the
    // test into a load of best[num_nearest - 1], an index known only at run time, and
    // keeps best[] in local memory (measured with -Xptxas -v: a 128-byte stack frame).
    if (k + 1 == num_nearest) last = best[k];
  }
  return last;
}

// The same with num_nearest known when the kernel compiles: the loop runs N slots, not
// TAG_MAX_NEAREST with a test each, and the last slot is best[N - 1]. The search's hot loop
// takes it for the games' usual num_nearest (TAG_GRID_FAST_NEAREST); SASS for sm_90 (nvcc
// 13.0): 64 instructions an insertion at 10, against 188 for the loop above.
#define TAG_GRID_FAST_NEAREST 10
template <int N>
__device__ __forceinline__ unsigned long long tag_keep_nearest_n(unsigned long long key,
                                                                 unsigned long long* best) {
  bool moving = false;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    if (moving || key < best[k]) {
      const unsigned long long b = best[k];
      best[k] = key;
      key = b;
      moving = true;
    }
  }
  return best[N - 1];
}

// The cell, along one side, of a coordinate: cells_per_unit cells to a unit of length, the
// field's far edge (and anything rounded past it) in the last cell.
__device__ __forceinline__ int tag_cell_of(float v, float cells_per_unit, int grid_side) {
  return min(max((int)(v * cells_per_unit), 0), grid_side - 1);
}

__device__ __forceinline__ int tag_cell_index(float x, float y, float cells_per_unit,
                                              int grid_side) {
  return tag_cell_of(y, cells_per_unit, grid_side) * grid_side +
         tag_cell_of(x, cells_per_unit, grid_side);
}

// The grid's side for the agents in the game now: about TAG_GRID_AGENTS_PER_CELL of them a
// cell (round(sqrt(playing / 2))), at least 1 and at most the side sized for all of them.
// Which side a block picks changes only how far its agents look, never what they find.
#define TAG_GRID_AGENTS_PER_CELL 2
__device__ __forceinline__ int tag_grid_side_for(int playing, int most) {
  const int side = (int)(sqrtf((float)playing / TAG_GRID_AGENTS_PER_CELL) + 0.5f);
  return min(max(side, 1), most);
}

// One round of the grid's running sum (step 2 of tag_nearest_grid): to[c] = from[c] plus
// from[c - d], the block's threads taking the cells in turn.
__device__ __forceinline__ void tag_sum_round(const int* from, int* to, int cells, int d) {
  for (int c = threadIdx.x; c < cells; c += blockDim.x) {
    to[c] = from[c] + (c >= d ? from[c - d] : 0);
  }
}

// Whether an agent's search can stop after ring r: every slot is full and nothing outside the
// square of rings searched can come before the last, all of it being at least `margin` from
// me (infinity where the square reaches the field's edge on every side: everything has been
// searched). Rounding may put an agent in the cell next to its own, less than `slack` over the
// line, so the test stays short of the line by that much; and 0.999: a distance's own
// rounding, by far less, cannot turn it.
__device__ __forceinline__ bool tag_grid_searched(unsigned long long last, float my_x, float my_y,
                                                  int cx, int cy, int r, float cell, float slack,
                                                  int grid_side) {
  if (last == TAG_NO_ONE) return false;
  float margin = INFINITY;
  if (cx - r > 0) margin = fminf(margin, my_x - (cx - r) * cell);
  if (cx + r < grid_side - 1) margin = fminf(margin, (cx + r + 1) * cell - my_x);
  if (cy - r > 0) margin = fminf(margin, my_y - (cy - r) * cell);
  if (cy + r < grid_side - 1) margin = fminf(margin, (cy + r + 1) * cell - my_y);
  margin -= slack;
  const float last_d2 = __uint_as_float((unsigned int)(last >> 32));
  return margin > 0.0f && last_d2 < 0.999f * margin * margin;
}

// grid_by_cell: step 5 writes each thread's row to its agent's, one agent after another of
// the warp (a run of a row each), not the warp's rows as one run.
__device__ __forceinline__ void tag_write_rows_of(int* nearest, const int* staged,
                                                  const int* agents, int env, int rows,
                                                  int width, int num_agents, int lane,
                                                  int live) {
  int row = lane / width, k = lane % width;  // carried forward, not divided again
  for (int e = lane; e < rows * width; e += live) {
    nearest[(long long)wd_slot(env, agents[row], num_agents) * width + k] = staged[e];
    k += live;
    while (k >= width) {
      k -= width;
      ++row;
    }
  }
}

// One thread per agent, every block of an env building the env's whole grid. The games launch
// it in blocks of GRID_THREADS (envs/_tag/game.py says what that gained), two an env of 1,000.
// grid_side: the side grid_side_for gives the game with every agent in it (envs/_tag/game.py);
// the block takes a smaller one when fewer are in the game.
// grid_by_cell (0 or 1): with 1, the env's agents are given to its threads in the grid's order,
// cell by cell, not in index order, so that a warp's 32 lanes search the same few cells and
// meet the same candidates (speed only: the slots are the same, each still its agent's).
extern "C" __global__ void __launch_bounds__(TAG_MAX_THREADS)
    tag_nearest_grid(const float* loc_x, const float* loc_y, const int* in_game, int* nearest,
                     int num_agents, int num_nearest, int grid_side, float field_size,
                     int grid_by_cell) {
  __shared__ float sorted_x[TAG_GRID_MAX_AGENTS];  // the env's agents in the game, by cell
  __shared__ float sorted_y[TAG_GRID_MAX_AGENTS];
  __shared__ int sorted_agent[TAG_GRID_MAX_AGENTS];
  __shared__ int by_cell_agent[TAG_GRID_MAX_AGENTS];  // grid_by_cell: all agents, by cell
  __shared__ int cell_start[TAG_GRID_MAX_SIDE * TAG_GRID_MAX_SIDE + 1];
  __shared__ int cell_next[TAG_GRID_MAX_SIDE * TAG_GRID_MAX_SIDE];
  __shared__ int cell_sum[TAG_GRID_MAX_SIDE * TAG_GRID_MAX_SIDE];  // step 2's other half
  __shared__ int playing;  // the env's agents in the game
  const int env = wd_env_id();
  const int agent = wd_agent_id();

  // 0. Size the grid by the agents still in the game (as runners leave, cells would empty
  //    and each agent would search more rings of them to find its nearest).
  if (threadIdx.x == 0) playing = 0;
  __syncthreads();
  int mine = 0;
  for (int a = threadIdx.x; a < num_agents; a += blockDim.x) {
    mine += in_game[wd_slot(env, a, num_agents)] != 0;
  }
  if (mine > 0) atomicAdd(&playing, mine);
  __syncthreads();
  grid_side = tag_grid_side_for(playing, grid_side);
  const int cells = grid_side * grid_side;
  const float cells_per_unit = grid_side / field_size;

  // 1. Count the agents in the game in each cell (grid_by_cell: and every agent, in the high
  //    half).
  for (int c = threadIdx.x; c < cells; c += blockDim.x) cell_next[c] = 0;
  __syncthreads();
  const int every = grid_by_cell ? TAG_GRID_EVERY : 0;
  for (int a = threadIdx.x; a < num_agents; a += blockDim.x) {
    const int j = wd_slot(env, a, num_agents);
    const int count = (in_game[j] != 0) + every;
    if (count == 0) continue;
    atomicAdd(&cell_next[tag_cell_index(loc_x[j], loc_y[j], cells_per_unit, grid_side)],
              count);
  }
  __syncthreads();
  // 2. Where each cell's agents start: the running sum of the counts before it, in
  //    log2(cells) rounds of the whole block (Hillis and Steele's scan: each round adds to
  //    every count the one d cells before it, from cell_next into cell_sum or back), then
  //    each cell's start is the sum up to the cell before it, and its next free place its
  //    start. One thread walking the 484 cells of 1,000 agents kept the block's other
  //    threads waiting about 10 us, 15 blocks an SM in turn (bench/NOTES.md).
  bool in_sum = false;  // whether the sums so far are in cell_sum (else in cell_next)
  for (int d = 1; d < cells; d *= 2) {
    if (in_sum) {
      tag_sum_round(cell_sum, cell_next, cells, d);
    } else {
      tag_sum_round(cell_next, cell_sum, cells, d);
    }
    in_sum = !in_sum;
    __syncthreads();
  }
  const int* sums = in_sum ? cell_sum : cell_next;  // sums[c]: the agents in cells 0 to c
  for (int c = threadIdx.x; c < cells; c += blockDim.x) cell_start[c + 1] = sums[c];
  if (threadIdx.x == 0) cell_start[0] = 0;
  __syncthreads();
  for (int c = threadIdx.x; c < cells; c += blockDim.x) cell_next[c] = cell_start[c];
  __syncthreads();
  // 3. Each agent in the game into its cell's next free place (within a cell in any order);
  //    grid_by_cell, every agent into the cell's next place in by_cell_agent too.
  for (int a = threadIdx.x; a < num_agents; a += blockDim.x) {
    const int j = wd_slot(env, a, num_agents);
    const int playing_here = in_game[j] != 0;
    if (playing_here + every == 0) continue;
    const int c = tag_cell_index(loc_x[j], loc_y[j], cells_per_unit, grid_side);
    const int at = atomicAdd(&cell_next[c], playing_here + every);
    if (grid_by_cell) by_cell_agent[at / TAG_GRID_EVERY] = a;
    if (!playing_here) continue;
    const int place = at & TAG_GRID_PLAYING;
    sorted_x[place] = loc_x[j];
    sorted_y[place] = loc_y[j];
    sorted_agent[place] = a;
  }
  __syncthreads();
  if (grid_by_cell) {
    // Each cell's agents in index order (an insertion sort, a thread a cell: about ten agents
    // a cell at a Tag step's 200 of 1,000 in the game), so that every block of the env puts
    // them in the same order: the atomics above leave it to chance, and two blocks must not
    // both take, or both leave, one agent. A cell of n agents costs its thread n * n / 2
    // moves: a game with every agent on one point is slow here, not wrong.
    for (int c = threadIdx.x; c < cells; c += blockDim.x) {
      const int first = cell_start[c] / TAG_GRID_EVERY, end = cell_start[c + 1] / TAG_GRID_EVERY;
      for (int n = first + 1; n < end; ++n) {
        const int a = by_cell_agent[n];
        int m = n;
        for (; m > first && by_cell_agent[m - 1] > a; --m) by_cell_agent[m] = by_cell_agent[m - 1];
        by_cell_agent[m] = a;
      }
    }
    __syncthreads();
    // the cells' starts, of the agents in the game only
    for (int c = threadIdx.x; c <= cells; c += blockDim.x) cell_start[c] &= TAG_GRID_PLAYING;
    __syncthreads();
  }
  // A thread past the env's last agent searches nothing, but stays for step 5's barriers.
  const bool active = agent < num_agents;
  // The agent this thread searches for: the agent-th by cell, or by index.
  const int me = !active ? 0 : grid_by_cell ? by_cell_agent[agent] : agent;

  // 4. Search the cells around mine, nearest rings first, until nothing further can be nearer.
  const int i = wd_slot(env, me, num_agents);
  const float my_x = loc_x[i];
  const float my_y = loc_y[i];
  const int cx = tag_cell_of(my_x, cells_per_unit, grid_side);
  const int cy = tag_cell_of(my_y, cells_per_unit, grid_side);
  const float cell = field_size / grid_side;
  const float slack = 1e-4f * cell;  // see tag_grid_searched
  unsigned long long best[TAG_MAX_NEAREST];  // in registers: see tag_keep_nearest
#pragma unroll
  for (int k = 0; k < TAG_MAX_NEAREST; ++k) best[k] = TAG_NO_ONE;
  unsigned long long last = TAG_NO_ONE;  // the key in the last slot
  // The cells are walked ring by ring: ring r is the 8r cells r away from mine (in the larger
  // of the two directions; ring 0 my own cell), as four sides of 2r, clockwise from its top
  // left corner; those off the field are passed over. Each turn of the loop compares one
  // candidate, and a lane whose cell has run out moves on to its next cell (and at the end of
  // a ring decides whether to stop) within the same turn. Walked the plain way, cell by cell
  // in nested loops, a warp's lanes, each in its own part of the field, wait at every cell for
  // the lane whose cell holds the most: bench/grid_model.py counts 123 turns a warp so,
  // against 55 for its busiest lane's candidates (200 of 1,000 agents in the game).
  // Measured on an H200 at 2,000 x 1,000 (bench/NOTES.md): 2,007 -> 1,956 us in the
  // continuous game's step, the Tag grid game's step 5.41 -> 4.55 ms. The Numba twin keeps
  // the nested walk, which Numba ran faster (nearest_numba.py says by how much).
  int r = 0, t = 0;         // ring r; the next of its cells to walk
  int side = 0, along = 0;  // that cell: which side of the ring, and how far along it
  int s = 0, end = 0;       // the candidates of the cell being walked: sorted_*[s, end)
  bool searching = active;
  while (searching) {
    while (s == end) {  // this cell is done: on to the next
      if (t == (r == 0 ? 1 : 8 * r)) {  // ring r is done: stop, or walk the next ring
        if (tag_grid_searched(last, my_x, my_y, cx, cy, r, cell, slack, grid_side) ||
            ++r == grid_side) {
          searching = false;
          break;
        }
        t = side = along = 0;
      }
      const int gx = side == 0 ? cx - r + along : side == 1 ? cx + r
                   : side == 2 ? cx + r - along : cx - r;
      const int gy = side == 0 ? cy - r : side == 1 ? cy - r + along
                   : side == 2 ? cy + r : cy + r - along;
      // The next cell: counted along the side, not divided out of t (t / 2r and t % 2r are
      // two integer divisions: this loop is 95 instructions of SASS for sm_90, 120 with them)
      ++t;
      if (++along == 2 * r) {
        along = 0;
        ++side;
      }
      if (gx < 0 || gx >= grid_side || gy < 0 || gy >= grid_side) continue;
      s = cell_start[gy * grid_side + gx];
      end = cell_start[gy * grid_side + gx + 1];
    }
    if (!searching) break;
    const int other = sorted_agent[s];
    if (other != me) {
      const unsigned long long key =
          tag_key(tag_distance2(sorted_x[s] - my_x, sorted_y[s] - my_y), other);
      if (key < last) {
        last = num_nearest == TAG_GRID_FAST_NEAREST
                   ? tag_keep_nearest_n<TAG_GRID_FAST_NEAREST>(key, best)
                   : tag_keep_nearest_keys(key, best, num_nearest);
      }
    }
    ++s;
  }

  // 5. Write the slots. A thread writing its own row would make each store of a warp touch 32
  //    rows 4 * num_nearest bytes apart, the strided writes that cost the plain observe most
  //    of its time (bench/NOTES.md, "The strided writes, measured"); so each warp writes its
  //    rows as the one run of memory they are (fast.cuh), staged in shared memory, a few
  //    warps at a time: the stage is sorted_agent, free once every search is done, and holds
  //    TAG_GRID_MAX_AGENTS / num_nearest rows (6 warps' at 10 nearest).
  int* stage = sorted_agent;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int per_round = TAG_GRID_MAX_AGENTS / (32 * num_nearest);  // warps; 4 at 16 nearest
  for (int round = 0; round * per_round < ((int)blockDim.x + 31) / 32; ++round) {
    __syncthreads();  // the stage is free: every search, or the round before, is done
    const int at = warp - round * per_round;  // this warp's place in the round, if it has one
    const bool in_round = at >= 0 && at < per_round;
    if (in_round && active) {
      int* row = stage + (at * 32 + lane) * num_nearest;
#pragma unroll
      for (int k = 0; k < TAG_MAX_NEAREST; ++k) {
        if (k < num_nearest) row[k] = best[k] == TAG_NO_ONE ? -1 : (int)(best[k] & 0xFFFFFFFFu);
      }
    }
    __syncthreads();  // the round's rows are staged
    if (!in_round) continue;
    const int first = agent - lane;  // the warp's first agent (grid_by_cell: first place)
    const int live = min(32, (int)blockDim.x - warp * 32);  // its lanes
    const int rows = max(0, min(live, num_agents - first));
    if (grid_by_cell) {
      tag_write_rows_of(nearest, stage + at * 32 * num_nearest, by_cell_agent + first, env,
                        rows, num_nearest, num_agents, lane, live);
    } else {
      fast_write_run(nearest + (long long)wd_slot(env, first, num_agents) * num_nearest,
                     stage + at * 32 * num_nearest, rows, num_nearest, lane, live);
    }
  }
}
