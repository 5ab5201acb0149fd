#!/usr/bin/env sh
# Rebuilds native/pow.wasm from native/wasm.c (needs clang and lld; on Debian `apt-get install clang
# lld`). The .wasm is committed, so installing nanopay never needs a WASM toolchain.
set -eu
cd "$(dirname "$0")"
clang --target=wasm32 -O3 -msimd128 -ffreestanding -nostdlib \
  -Wl,--no-entry -Wl,--export=search -Wl,--export=root_ptr -Wl,--export=found \
  -Wl,--export=hashes -Wl,--export=unseen \
  -o pow.wasm wasm.c
