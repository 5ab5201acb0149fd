/*
 * One build of the kernel for one instruction set. binding.gyp compiles this file once per
 * level (each with its own -m flags and POW_VARIANT name) and addon.c picks, at run time, the
 * best one the CPU has: no build is for "this machine" only, so a built addon (a Docker image)
 * runs on any x86-64 CPU.
 */
#include "pow_kernel.h"

int POW_VARIANT(const uint8_t root[32], uint64_t threshold, uint64_t start, uint64_t count, const int32_t *stop,
                struct pow_outcome *out) {
  return pow_search(root, threshold, start, count, stop, out);
}
