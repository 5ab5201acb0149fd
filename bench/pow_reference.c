/*
 * The reference for `npm run bench:pow`: the multi-lane kernel (8 nonces per
 * 64-bit vector lane group, GCC vector extensions, -O3 -march=native) on plain
 * pthreads, with no Node in the way. Prints hashes per second as JSON.
 * Usage: pow_reference THREADS SECONDS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "../native/pow_kernel.h"

static volatile int stop_all = 0;
/* The kernel reads a stop flag as nanopay's does; this one is never set (batches end the run). */
static const int32_t never = 0;

struct job {
  uint64_t start;
  uint64_t hashes;
};

static void *run(void *arg) {
  struct job *job = arg;
  uint8_t root[32] = {0};
  uint64_t nonce = job->start;
  const uint64_t batch = 1 << 20;
  struct pow_outcome out;
  while (!stop_all) {
    /* An unreachable threshold: every nonce is hashed and compared. */
    if (pow_search(root, UINT64_MAX, nonce, batch, &never, &out) == POW_FOUND && out.nonce == 0) break;
    nonce += batch;
    job->hashes += batch;
  }
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  double seconds = argc > 2 ? atof(argv[2]) : 3;
  pthread_t ids[256];
  struct job jobs[256];
  if (threads < 1 || threads > 256) return 2;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < threads; i++) {
    jobs[i].start = (uint64_t)i << 60;
    jobs[i].hashes = 0;
    pthread_create(&ids[i], NULL, run, &jobs[i]);
  }
  struct timespec wait = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&wait, NULL);
  stop_all = 1;
  uint64_t total = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(ids[i], NULL);
    total += jobs[i].hashes;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double elapsed = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  printf("{\"threads\": %d, \"hashes_per_second\": %.0f}\n", threads, (double)total / elapsed);
  return 0;
}
