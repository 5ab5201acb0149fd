/*
 * Nano proof of work: blake2b with an 8-byte digest over one 40-byte message
 * (nonce as 8 little-endian bytes, then the 32-byte root). Specialised for that
 * single block, and evaluating POW_LANES nonces at once in 64-bit vector lanes
 * (GCC/Clang vector extensions: AVX-512 holds 8 lanes, AVX2 4, WASM SIMD 2).
 * The work value is the digest read as a little-endian u64, i.e. h[0].
 */
#ifndef NANOPAY_POW_KERNEL_H
#define NANOPAY_POW_KERNEL_H

#include <stdint.h>
#include "pow_variants.h"

typedef uint64_t lanes_t __attribute__((vector_size(POW_LANES * 8)));

static const uint64_t POW_IV[8] = {
  0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
  0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t POW_SIGMA[12][16] = {
  {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
  {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
  {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
  {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
  {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
  {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

#define POW_ROTR(x, n) (((x) >> (n)) | ((x) << (64 - (n))))

#if defined(__wasm_simd128__) && POW_LANES == 2
/* WASM SIMD has no 64-bit rotate: rotations by whole bytes are single byte shuffles there. */
typedef uint8_t pow_bytes_t __attribute__((vector_size(16)));
#define POW_R8(k, b) b + ((0 + k) & 7), b + ((1 + k) & 7), b + ((2 + k) & 7), b + ((3 + k) & 7), \
                     b + ((4 + k) & 7), b + ((5 + k) & 7), b + ((6 + k) & 7), b + ((7 + k) & 7)
#define POW_ROTR_BYTES(x, k) \
  ((lanes_t)__builtin_shufflevector((pow_bytes_t)(x), (pow_bytes_t)(x), POW_R8(k, 0), POW_R8(k, 8)))
#define POW_ROTR32(x) POW_ROTR_BYTES(x, 4)
#define POW_ROTR24(x) POW_ROTR_BYTES(x, 3)
#define POW_ROTR16(x) POW_ROTR_BYTES(x, 2)
#else
#define POW_ROTR32(x) POW_ROTR(x, 32)
#define POW_ROTR24(x) POW_ROTR(x, 24)
#define POW_ROTR16(x) POW_ROTR(x, 16)
#endif

#define POW_G(a, b, c, d, x, y)        \
  do {                                 \
    a = a + b + (x);                   \
    d = POW_ROTR32(d ^ a);             \
    c = c + d;                         \
    b = POW_ROTR24(b ^ c);             \
    a = a + b + (y);                   \
    d = POW_ROTR16(d ^ a);             \
    c = c + d;                         \
    b = POW_ROTR(b ^ c, 63);           \
  } while (0)

/*
 * Values of POW_LANES consecutive nonces starting at `nonce`. Always inlined: GCC otherwise calls it once per
 * step (its -O3 heuristics keep a function this size out of line), passing the lanes through memory and setting up
 * the constant message words again each time; inlined, the search loop ran 4-10% faster here (AVX-512).
 */
static inline __attribute__((always_inline)) lanes_t pow_values(const uint64_t root[4], uint64_t nonce) {
  lanes_t m[16];
  for (int i = 0; i < POW_LANES; i++) m[0][i] = nonce + (uint64_t)i;
  for (int w = 1; w < 16; w++) {
    uint64_t word = w <= 4 ? root[w - 1] : 0;
    for (int i = 0; i < POW_LANES; i++) m[w][i] = word;
  }
  /* Parameter block: digest length 8, no key, fanout 1, depth 1. */
  const uint64_t h0 = POW_IV[0] ^ 0x01010008ULL;
  lanes_t v[16];
  for (int k = 0; k < 8; k++)
    for (int i = 0; i < POW_LANES; i++) {
      v[k][i] = k == 0 ? h0 : POW_IV[k];
      v[k + 8][i] = POW_IV[k];
    }
  v[12] ^= 40;   /* bytes compressed */
  v[14] = ~v[14]; /* the last block */
  /* Fully unrolled, the message indices are constants and the zero words fold away. */
#pragma GCC unroll 12
  for (int r = 0; r < 12; r++) {
    const uint8_t *s = POW_SIGMA[r];
    POW_G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
    POW_G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
    POW_G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
    POW_G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
    POW_G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
    POW_G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
    POW_G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
    POW_G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
  }
  lanes_t out;
  for (int i = 0; i < POW_LANES; i++) out[i] = h0 ^ v[0][i] ^ v[8][i];
  return out;
}

/*
 * How often the search looks at its stop flag, in nonces: a fraction of a millisecond of work on
 * any kernel, so a search stops at once when another thread has answered, yet too rare to cost
 * anything measurable.
 */
#define POW_STOP_EVERY 4096

/*
 * How a search reads its stop flag; a build without shared memory (WASM) defines its own. The flag
 * is written by other threads; a relaxed atomic load is enough because nothing else is read
 * through it.
 */
#ifndef POW_STOP_REQUESTED
#define POW_STOP_REQUESTED(stop) (__atomic_load_n((stop), __ATOMIC_RELAXED) != 0)
#endif

static inline int pow_end(struct pow_outcome *out, int status, uint64_t hashes, uint64_t seen_clear) {
  out->hashes = hashes;
  out->unseen = hashes - seen_clear;
  return status;
}

/*
 * Searches nonces start, start+1, … (count of them, rounded up to whole lane groups) until one
 * meets the threshold or the stop flag is set; the flag is read before every POW_STOP_EVERY
 * nonces. Always inlined too, so that each build of it (pow_variant.c) holds its whole loop.
 */
static inline __attribute__((always_inline)) int pow_search(const uint8_t root_bytes[32], uint64_t threshold, uint64_t start,
                                                            uint64_t count, const int32_t *stop, struct pow_outcome *out) {
  uint64_t root[4];
  for (int w = 0; w < 4; w++) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; b--) word = (word << 8) | root_bytes[w * 8 + b];
    root[w] = word;
  }
  uint64_t seen_clear = 0, done = 0;
  while (done < count) {
    if (POW_STOP_REQUESTED(stop)) return pow_end(out, POW_STOPPED, done, seen_clear);
    seen_clear = done;
    const uint64_t chunk_end = count - done < POW_STOP_EVERY ? count : done + POW_STOP_EVERY;
    for (; done < chunk_end; done += POW_LANES) {
      lanes_t values = pow_values(root, start + done);
      for (int i = 0; i < POW_LANES; i++) {
        if (values[i] >= threshold) {
          out->nonce = start + done + (uint64_t)i;
          return pow_end(out, POW_FOUND, done + (uint64_t)i + 1, seen_clear);
        }
      }
    }
  }
  return pow_end(out, POW_EXHAUSTED, done, seen_clear);
}

#endif
