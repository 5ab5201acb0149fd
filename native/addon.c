/* N-API binding of the multi-lane kernel: one synchronous search per call, run on a worker thread. */
#include <node_api.h>
#include "pow_kernel.h"

#define CHECK(call) if ((call) != napi_ok) { napi_throw_error(env, NULL, "nanopay_pow: bad arguments"); return NULL; }

/* search(root: Buffer(32), threshold: bigint, start: bigint, count: number) -> bigint | null */
static napi_value search(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 4) { napi_throw_error(env, NULL, "nanopay_pow.search takes 4 arguments"); return NULL; }
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
  uint64_t found;
  napi_value result;
  if (count > 0 && pow_search((const uint8_t *)root, threshold, start, (uint64_t)count, &found)) {
    CHECK(napi_create_bigint_uint64(env, found, &result));
  } else {
    CHECK(napi_get_null(env, &result));
  }
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn, lanes;
  CHECK(napi_create_function(env, "search", NAPI_AUTO_LENGTH, search, NULL, &fn));
  CHECK(napi_set_named_property(env, exports, "search", fn));
  CHECK(napi_create_int32(env, POW_LANES, &lanes));
  CHECK(napi_set_named_property(env, exports, "lanes", lanes));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
