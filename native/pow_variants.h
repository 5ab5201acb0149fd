/*
 * The kernel's interface (pow_kernel.h implements it) and its builds, one per instruction set
 * (pow_variant.c), among which addon.c chooses at run time.
 */
#ifndef NANOPAY_POW_VARIANTS_H
#define NANOPAY_POW_VARIANTS_H

#include <stdint.h>

/* Nonces per step, in 64-bit vector lanes (AVX-512 holds 8, AVX2 4 and SSE2 2 a register: wider steps are split). */
#ifndef POW_LANES
#define POW_LANES 8
#endif

enum { POW_EXHAUSTED = 0, POW_FOUND = 1, POW_STOPPED = 2 };

struct pow_outcome {
  uint64_t nonce;   /* POW_FOUND: the nonce that meets the threshold */
  uint64_t hashes;  /* nonces tried, up to and including the one found */
  uint64_t unseen;  /* nonces tried after the flag was last read as clear: a bound on work done after a stop */
};

typedef int (*pow_search_fn)(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count,
                             const int32_t *stop, struct pow_outcome *out);

/*
 * Every CPU of the architecture: SSE2 on x86-64 (its baseline), the compiler's default elsewhere. Each instruction set
 * is built at 8 lanes and at one other width (the `_N` builds), which may run faster where registers or execution
 * units differ (an AVX-512 unit that splits 512-bit operations): which is fastest is measured, not guessed.
 */
int pow_search_baseline(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count, const int32_t *stop,
                        struct pow_outcome *out);
int pow_search_baseline_4(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count, const int32_t *stop,
                          struct pow_outcome *out);
#ifdef POW_X86_VARIANTS
int pow_search_avx2(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count, const int32_t *stop,
                    struct pow_outcome *out);
int pow_search_avx2_4(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count, const int32_t *stop,
                      struct pow_outcome *out);
int pow_search_avx512(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count, const int32_t *stop,
                      struct pow_outcome *out);
int pow_search_avx512_16(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count, const int32_t *stop,
                         struct pow_outcome *out);
#endif

#endif
