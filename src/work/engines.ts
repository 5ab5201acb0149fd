import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { blake2b } from '@noble/hashes/blake2.js';

/**
 * The search kernels, fastest first: the native addon (multi-lane C, built at
 * install for this CPU), the WASM SIMD build of the same kernel, and plain JS.
 * Each searches `count` consecutive nonces from `start` and returns the first
 * that meets the threshold. Only workers call them: they block while they run,
 * reading the shared stop flag every few thousand nonces so another thread can
 * end them within a fraction of a millisecond.
 */
export type EngineName = 'native' | 'wasm' | 'js';

export interface SearchResult {
  /** The first nonce that meets the threshold, or null. */
  nonce: bigint | null;
  /** Nonces tried, up to and including the one found. */
  hashes: number;
  /** The call ended because the stop flag was set. */
  stopped: boolean;
  /** Nonces tried after the flag was last read as clear: when stopped, a bound on the work done after the stop. */
  unseen: number;
}

export interface Engine {
  name: EngineName;
  /** The native addon's kernel (an instruction set and width: avx512, avx2-4…); undefined for the others. */
  kernel?: string;
  /** Nonces per call: how often a worker can report progress (the stop flag is read far more often). */
  batch: number;
  /** `stop`: Int32 flag, non-zero means stop (without it, a flag no one sets). */
  search(root: Uint8Array, threshold: bigint, start: bigint, count: number, stop?: Int32Array): SearchResult;
}

const MASK = 2n ** 64n - 1n;
/** The flag of a call given none: no one sets it. */
const NEVER = new Int32Array(1);

/** The native addon: the kernels this CPU runs, by name, with their widths, and the one its flags suggest. */
interface Addon {
  kernel: string;
  kernels: Record<string, Engine['search']>;
  kernelLanes: Record<string, number>;
}

export const ADDON_FILE = new URL('../../build/Release/nanopay_pow.node', import.meta.url);

function addon(): Addon {
  return createRequire(import.meta.url)(fileURLToPath(ADDON_FILE)) as Addon;
}

/** The native kernels this CPU runs, with their widths (lanes), the one its flags suggest first; undefined without the addon. */
export function nativeKernels(): { name: string; lanes: number }[] | undefined {
  try {
    const loaded = addon();
    const names = Object.keys(loaded.kernels);
    return [loaded.kernel, ...names.filter((n) => n !== loaded.kernel)].map((name) => ({ name, lanes: loaded.kernelLanes[name] ?? 8 }));
  } catch {
    return undefined;
  }
}

/** The native engine, with `kernel` when this CPU runs it, else the kernel its flags suggest. */
function nativeEngine(kernel?: string): Engine {
  const loaded = addon();
  const name = kernel !== undefined && loaded.kernels[kernel] !== undefined ? kernel : loaded.kernel;
  const search = loaded.kernels[name] as Engine['search'];
  return { name: 'native', kernel: name, batch: 1 << 20, search: (root, threshold, start, count, stop) => search(root, threshold, start, count, stop) };
}

/** The part of the WebAssembly global used here (@types/node 20 does not declare it). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}

/** The kernels' outcome codes (native/pow_kernel.h). */
const FOUND = 1;
const STOPPED = 2;

function wasmEngine(): Engine {
  const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
  const module = new wasm.Module(readFileSync(new URL('../../native/pow.wasm', import.meta.url)));
  // The flag of the call running now; the kernel asks for it through this import.
  let flag: Int32Array = NEVER;
  const env = { stop_requested: (): number => Atomics.load(flag, 0) };
  const exports = new wasm.Instance(module, { env }).exports as {
    memory: { buffer: ArrayBuffer };
    root_ptr(): number;
    found(): bigint;
    hashes(): bigint;
    unseen(): bigint;
    search(threshold: bigint, start: bigint, count: number): number;
  };
  const rootView = new Uint8Array(exports.memory.buffer, exports.root_ptr(), 32);
  return {
    name: 'wasm',
    batch: 1 << 18,
    search: (root, threshold, start, count, stop) => {
      rootView.set(root);
      flag = stop ?? NEVER;
      // WASM i64 values cross into JS as signed BigInts.
      const status = exports.search(BigInt.asIntN(64, threshold), BigInt.asIntN(64, start), count);
      return {
        nonce: status === FOUND ? exports.found() & MASK : null,
        hashes: Number(exports.hashes()),
        stopped: status === STOPPED,
        unseen: Number(exports.unseen()),
      };
    },
  };
}

/** The JS kernel is ~100x slower: it reads the flag more often to stop as soon as the others. */
const JS_STOP_EVERY = 64;

function jsEngine(): Engine {
  const input = Buffer.alloc(40);
  return {
    name: 'js',
    batch: 1 << 12,
    search: (root, threshold, start, count, stop = NEVER) => {
      input.set(root, 8);
      let seenClear = 0;
      for (let i = 0; i < count; i++) {
        if (i % JS_STOP_EVERY === 0) {
          if (Atomics.load(stop, 0) !== 0) return { nonce: null, hashes: i, stopped: true, unseen: i - seenClear };
          seenClear = i;
        }
        const nonce = (start + BigInt(i)) & MASK;
        input.writeBigUInt64LE(nonce, 0);
        if (Buffer.from(blake2b(input, { dkLen: 8 })).readBigUInt64LE(0) >= threshold) return { nonce, hashes: i + 1, stopped: false, unseen: i + 1 - seenClear };
      }
      return { nonce: null, hashes: count, stopped: false, unseen: count - seenClear };
    },
  };
}

const LOADERS: Record<EngineName, (kernel?: string) => Engine> = { native: nativeEngine, wasm: wasmEngine, js: jsEngine };

let toldNoAddon = false;

/**
 * Once per process, on its main thread: the addon is built at install only where a C compiler is (npm shows
 * nothing of an install script that succeeds), so this line is where a user learns why work is slower.
 */
function tellNoAddon(fallback: EngineName): void {
  if (toldNoAddon || !isMainThread) return;
  toldNoAddon = true;
  console.error(`nanopay: proof of work runs on the ${fallback} kernel, slower: the native addon was not built at install, which needs a C compiler (README: Install).`);
}

/**
 * The engine named (NANOPAY_POW_ENGINE; `native:KERNEL` names a native kernel
 * too) if it loads here, else the fastest that does: native, then wasm, then
 * js (which always loads).
 */
export function loadEngine(preferred?: string): Engine {
  const [wanted, kernel] = (preferred ?? '').split(':') as [string, string | undefined];
  const fastestFirst: EngineName[] = ['native', 'wasm', 'js'];
  const named = fastestFirst.includes(wanted as EngineName);
  const order = named ? [wanted as EngineName, ...fastestFirst.filter((n) => n !== wanted)] : fastestFirst;
  let nativeMissing = false;
  for (const name of order) {
    try {
      const engine = LOADERS[name](kernel);
      if (nativeMissing && !named) tellNoAddon(engine.name);
      return engine;
    } catch {
      // Not built or not supported here: try the next one.
      if (name === 'native') nativeMissing = true;
    }
  }
  return jsEngine();
}
