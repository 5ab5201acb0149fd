/* The WASM SIMD build of the kernel (2 lanes of i64x2), the fallback when the native addon is missing. */
#define POW_LANES 2

/*
 * The stop flag lives in a SharedArrayBuffer outside this module's memory, so the kernel asks the
 * host (one cheap call every POW_STOP_EVERY nonces) instead of reading it.
 */
__attribute__((import_module("env"), import_name("stop_requested"))) int stop_requested(void);
#define POW_STOP_REQUESTED(stop) ((void)(stop), stop_requested() != 0)

#include "pow_kernel.h"

static uint8_t root_buffer[32];
static struct pow_outcome outcome;

uint8_t *root_ptr(void) { return root_buffer; }
uint64_t found(void) { return outcome.nonce; }
uint64_t hashes(void) { return outcome.hashes; }
uint64_t unseen(void) { return outcome.unseen; }
/* Returns POW_EXHAUSTED, POW_FOUND or POW_STOPPED. */
int search(uint64_t threshold, uint64_t start, uint32_t count) {
  return pow_search(root_buffer, threshold, start, count, 0, &outcome);
}
