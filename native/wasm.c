/* The WASM SIMD build of the kernel (2 lanes of i64x2), the fallback when the native addon is missing. */
#define POW_LANES 2
#include "pow_kernel.h"

static uint8_t root_buffer[32];
static uint64_t found_nonce;

uint8_t *root_ptr(void) { return root_buffer; }
uint64_t found(void) { return found_nonce; }
int search(uint64_t threshold, uint64_t start, uint32_t count) {
  return pow_search(root_buffer, threshold, start, count, &found_nonce);
}
