import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { blake2b } from '@noble/hashes/blake2.js';

/**
 * The search kernels, fastest first: the native addon (multi-lane C, built at
 * install for this CPU), the WASM SIMD build of the same kernel, and plain JS.
 * Each searches `count` consecutive nonces from `start` and returns the first
 * that meets the threshold. Only workers call them: they block while they run.
 */
export type EngineName = 'native' | 'wasm' | 'js';

export interface Engine {
  name: EngineName;
  /** Nonces per call: about 10-50 ms of work, so a stop request is seen quickly. */
  batch: number;
  search(root: Uint8Array, threshold: bigint, start: bigint, count: number): bigint | null;
}

const MASK = 2n ** 64n - 1n;

function nativeEngine(): Engine {
  const require = createRequire(import.meta.url);
  const addon = require('../../build/Release/nanopay_pow.node') as { search(root: Uint8Array, threshold: bigint, start: bigint, count: number): bigint | null };
  return { name: 'native', batch: 1 << 20, search: (root, threshold, start, count) => addon.search(root, threshold, start, count) };
}

/** The part of the WebAssembly global used here (@types/node 20 does not declare it). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}

function wasmEngine(): Engine {
  const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
  const module = new wasm.Module(readFileSync(new URL('../../native/pow.wasm', import.meta.url)));
  const exports = new wasm.Instance(module, {}).exports as {
    memory: { buffer: ArrayBuffer };
    root_ptr(): number;
    found(): bigint;
    search(threshold: bigint, start: bigint, count: number): number;
  };
  const rootView = new Uint8Array(exports.memory.buffer, exports.root_ptr(), 32);
  return {
    name: 'wasm',
    batch: 1 << 16,
    search: (root, threshold, start, count) => {
      rootView.set(root);
      // WASM i64 values cross into JS as signed BigInts.
      return exports.search(BigInt.asIntN(64, threshold), BigInt.asIntN(64, start), count) === 1 ? exports.found() & MASK : null;
    },
  };
}

function jsEngine(): Engine {
  const input = Buffer.alloc(40);
  return {
    name: 'js',
    batch: 1 << 12,
    search: (root, threshold, start, count) => {
      input.set(root, 8);
      for (let i = 0; i < count; i++) {
        const nonce = (start + BigInt(i)) & MASK;
        input.writeBigUInt64LE(nonce, 0);
        if (Buffer.from(blake2b(input, { dkLen: 8 })).readBigUInt64LE(0) >= threshold) return nonce;
      }
      return null;
    },
  };
}

const LOADERS: Record<EngineName, () => Engine> = { native: nativeEngine, wasm: wasmEngine, js: jsEngine };

/**
 * The engine named (NANOPAY_POW_ENGINE) if it loads here, else the fastest that
 * does: native, then wasm, then js (which always loads).
 */
export function loadEngine(preferred?: string): Engine {
  const fastestFirst: EngineName[] = ['native', 'wasm', 'js'];
  const order = fastestFirst.includes(preferred as EngineName) ? [preferred as EngineName, ...fastestFirst.filter((n) => n !== preferred)] : fastestFirst;
  for (const name of order) {
    try {
      return LOADERS[name]();
    } catch {
      // Not built or not supported here: try the next one.
    }
  }
  return jsEngine();
}
