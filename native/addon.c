/*
 * N-API binding of the multi-lane kernel: one synchronous search per call, run on a worker thread.
 * The kernel is built once per instruction set (pow_variant.c); the best one this CPU runs is chosen
 * when the addon loads, so one build serves every CPU of the architecture.
 * It also makes a process holding unlocked keys unreadable to the user's other processes (undumpable).
 */
#include <node_api.h>
#include "pow_variants.h"
#if defined(__linux__)
#include <sys/prctl.h>
#elif defined(__APPLE__)
#include <sys/types.h>
#include <sys/ptrace.h>
#endif

#define CHECK(call) if ((call) != napi_ok) { napi_throw_error(env, NULL, "nanopay_pow: bad arguments"); return NULL; }

/*
 * search(root: Buffer(32), threshold: bigint, start: bigint, count: number, stop?: Int32Array)
 *   -> { nonce: bigint | null, hashes: number, stopped: boolean, unseen: number }
 * `stop` is read inside the loop, so another thread can end the call within POW_STOP_EVERY nonces.
 */
static napi_value search(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  void *data;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, &data));
  pow_search_fn kernel = (pow_search_fn)data;
  if (argc < 4) { napi_throw_error(env, NULL, "nanopay_pow.search takes 4 or 5 arguments"); return NULL; }
  void *root;
  size_t length;
  CHECK(napi_get_buffer_info(env, argv[0], &root, &length));
  if (length != 32) { napi_throw_error(env, NULL, "root must be 32 bytes"); return NULL; }
  uint64_t threshold, start;
  bool lossless;
  CHECK(napi_get_value_bigint_uint64(env, argv[1], &threshold, &lossless));
  CHECK(napi_get_value_bigint_uint64(env, argv[2], &start, &lossless));
  int64_t count;
  CHECK(napi_get_value_int64(env, argv[3], &count));
  /* Without a flag the kernel reads this one, which no one sets. */
  static const int32_t never = 0;
  const int32_t *stop = &never;
  napi_valuetype kind = napi_undefined;
  if (argc == 5) CHECK(napi_typeof(env, argv[4], &kind));
  if (kind != napi_undefined) {
    napi_typedarray_type type;
    size_t elements;
    void *data;
    CHECK(napi_get_typedarray_info(env, argv[4], &type, &elements, &data, NULL, NULL));
    if (type != napi_int32_array || elements < 1) { napi_throw_error(env, NULL, "stop must be an Int32Array"); return NULL; }
    stop = data;
  }
  struct pow_outcome out = {0, 0, 0};
  int status = count > 0 ? kernel((const uint8_t *)root, threshold, start, (uint64_t)count, stop, &out) : POW_EXHAUSTED;
  napi_value result, nonce, hashes, stopped, unseen;
  CHECK(napi_create_object(env, &result));
  if (status == POW_FOUND) {
    CHECK(napi_create_bigint_uint64(env, out.nonce, &nonce));
  } else {
    CHECK(napi_get_null(env, &nonce));
  }
  CHECK(napi_create_double(env, (double)out.hashes, &hashes));
  CHECK(napi_get_boolean(env, status == POW_STOPPED, &stopped));
  CHECK(napi_create_double(env, (double)out.unseen, &unseen));
  CHECK(napi_set_named_property(env, result, "nonce", nonce));
  CHECK(napi_set_named_property(env, result, "hashes", hashes));
  CHECK(napi_set_named_property(env, result, "stopped", stopped));
  CHECK(napi_set_named_property(env, result, "unseen", unseen));
  return result;
}

/*
 * undumpable() -> boolean: whether this process is now closed to the user's other processes, as ssh-agent
 * does it. On Linux PR_SET_DUMPABLE 0: no ptrace attach, /proc/PID/mem, maps or environ for anyone but
 * root (CAP_SYS_PTRACE), and no core dump. On macOS PT_DENY_ATTACH. Elsewhere false.
 */
static napi_value undumpable(napi_env env, napi_callback_info info) {
  (void)info;
  int done = 0;
#if defined(__linux__)
  done = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
#elif defined(__APPLE__)
  done = ptrace(PT_DENY_ATTACH, 0, 0, 0) == 0;
#endif
  napi_value result;
  CHECK(napi_get_boolean(env, done, &result));
  return result;
}

struct pow_kernel_choice {
  const char *name;
  pow_search_fn search;
  int lanes;
  int supported;
};

#define POW_KERNELS 6

/* The kernels, best first as the CPU's flags suggest, each with whether this CPU runs it (asked of the CPU itself: cpuid). */
static int pow_kernels(struct pow_kernel_choice kernels[POW_KERNELS]) {
  int n = 0;
#ifdef POW_X86_VARIANTS
  __builtin_cpu_init();
  const int avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
  kernels[n++] = (struct pow_kernel_choice){"avx512", pow_search_avx512, 8, avx512};
  kernels[n++] = (struct pow_kernel_choice){"avx512-16", pow_search_avx512_16, 16, avx512};
  kernels[n++] = (struct pow_kernel_choice){"avx2", pow_search_avx2, 8, avx2};
  kernels[n++] = (struct pow_kernel_choice){"avx2-4", pow_search_avx2_4, 4, avx2};
#endif
  kernels[n++] = (struct pow_kernel_choice){"baseline", pow_search_baseline, 8, 1};
  kernels[n++] = (struct pow_kernel_choice){"baseline-4", pow_search_baseline_4, 4, 1};
  return n;
}

/*
 * exports.search: the best kernel this CPU runs, as its flags suggest; exports.kernel: its name; exports.kernels:
 * every kernel this CPU runs, by name, and exports.kernelLanes their widths (the choice measured on this machine picks
 * among them); exports.lanes: nonces per step of the 8-lane kernels.
 */
static napi_value init(napi_env env, napi_value exports) {
  struct pow_kernel_choice kernels[POW_KERNELS];
  int n = pow_kernels(kernels);
  napi_value fn, lanes, all, widths, width, name;
  int chosen = -1;
  CHECK(napi_create_object(env, &all));
  CHECK(napi_create_object(env, &widths));
  for (int i = 0; i < n; i++) {
    if (!kernels[i].supported) continue;
    if (chosen < 0) chosen = i;
    CHECK(napi_create_function(env, kernels[i].name, NAPI_AUTO_LENGTH, search, (void *)kernels[i].search, &fn));
    CHECK(napi_set_named_property(env, all, kernels[i].name, fn));
    CHECK(napi_create_int32(env, kernels[i].lanes, &width));
    CHECK(napi_set_named_property(env, widths, kernels[i].name, width));
  }
  CHECK(napi_get_named_property(env, all, kernels[chosen].name, &fn));
  CHECK(napi_set_named_property(env, exports, "search", fn));
  CHECK(napi_create_string_utf8(env, kernels[chosen].name, NAPI_AUTO_LENGTH, &name));
  CHECK(napi_set_named_property(env, exports, "kernel", name));
  CHECK(napi_set_named_property(env, exports, "kernels", all));
  CHECK(napi_set_named_property(env, exports, "kernelLanes", widths));
  CHECK(napi_create_int32(env, POW_LANES, &lanes));
  CHECK(napi_set_named_property(env, exports, "lanes", lanes));
  CHECK(napi_create_function(env, "undumpable", NAPI_AUTO_LENGTH, undumpable, NULL, &fn));
  CHECK(napi_set_named_property(env, exports, "undumpable", fn));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
