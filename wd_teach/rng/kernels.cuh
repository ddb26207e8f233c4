// wd_teach/rng/kernels.cuh: Philox4x32-10, the counter-based random numbers of wd_teach's kernels.
//
// A pure function of (counter, key): a thread needs no generator state beyond its own draw
// count. The Numba twin, line for line, is wd_teach/rng/kernels_numba.py; the NumPy reference, with
// the why, is wd_teach/rng/reference.py. All three give the same bits, so every backend draws the
// same numbers from the same seed.
#pragma once

// Philox's multipliers, and what its key grows by between rounds.
constexpr unsigned int WD_PHILOX_M0 = 0xD2511F53u;
constexpr unsigned int WD_PHILOX_M1 = 0xCD9E8D57u;
constexpr unsigned int WD_PHILOX_W0 = 0x9E3779B9u;
constexpr unsigned int WD_PHILOX_W1 = 0xBB67AE85u;
constexpr int WD_PHILOX_ROUNDS = 10;
// A uniform float keeps the top 24 bits of a word: exact in a float, in [0, 1).
constexpr int WD_UNIFORM_SHIFT = 8;
constexpr float WD_UNIFORM_SCALE = 1.0f / 16777216.0f;  // 2^-24

// The high and low 32 bits of the 64-bit product a * b.
__device__ __forceinline__ void wd_mulhilo(unsigned int a, unsigned int b, unsigned int* hi,
                                           unsigned int* lo) {
  const unsigned long long product = (unsigned long long)a * b;
  *hi = (unsigned int)(product >> 32);
  *lo = (unsigned int)product;
}

// Ten rounds of Philox on the counter (c0, c1, c2, c3) under the key (k0, k1).
__device__ __forceinline__ uint4 wd_philox4x32_10(unsigned int c0, unsigned int c1,
                                                  unsigned int c2, unsigned int c3,
                                                  unsigned int k0, unsigned int k1) {
  for (int round = 0; round < WD_PHILOX_ROUNDS; ++round) {
    if (round > 0) {
      k0 = k0 + WD_PHILOX_W0;  // unsigned int wraps at 2^32
      k1 = k1 + WD_PHILOX_W1;
    }
    unsigned int hi0, lo0, hi1, lo1;
    wd_mulhilo(WD_PHILOX_M0, c0, &hi0, &lo0);
    wd_mulhilo(WD_PHILOX_M1, c2, &hi1, &lo1);
    const uint4 next = make_uint4(hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0);
    c0 = next.x; c1 = next.y; c2 = next.z; c3 = next.w;
  }
  return make_uint4(c0, c1, c2, c3);
}

// A float in [0, 1) from a 32-bit word.
__device__ __forceinline__ float wd_uniform_from_bits(unsigned int bits) {
  return (float)(bits >> WD_UNIFORM_SHIFT) * WD_UNIFORM_SCALE;
}

// The uniform number thread (env, agent) gets for its `draw`-th draw of stream `stream`;
// `key` holds the seed's two words.
__device__ __forceinline__ float wd_uniform(int agent, int env, unsigned int draw, int stream,
                                            const unsigned int* key) {
  const uint4 bits = wd_philox4x32_10(agent, env, draw, stream, key[0], key[1]);
  return wd_uniform_from_bits(bits.x);
}
