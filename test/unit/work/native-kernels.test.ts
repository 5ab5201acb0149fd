import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch } from 'node:os';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { workValue } from '../../../src/work/index.js';
import { vectors } from '../../helpers/ledger/vectors.js';

/**
 * The native addon is built once for every CPU of its architecture (a Docker image runs
 * wherever it is pulled): each kernel build is for one instruction set, and the addon picks
 * the best one this CPU has when it loads. Nothing is built for "this machine" (-march=native).
 */
type Search = (root: Uint8Array, threshold: bigint, start: bigint, count: number) => { nonce: bigint | null; hashes: number };
interface Addon {
  search: Search;
  kernel: string;
  kernels: Record<string, Search>;
  lanes: number;
}

const root = fileURLToPath(new URL('../../..', import.meta.url));
const addonPath = `${root}build/Release/nanopay_pow.node`;
const built = existsSync(addonPath);
const notBuilt = 'the native addon was not built here (npm ci builds it with node-gyp)';
const addon = built ? (createRequire(import.meta.url)(addonPath) as Addon) : undefined;
const x64 = arch() === 'x64';

/** What the kernel (and the CPU) says it has, from /proc/cpuinfo: the addon must agree with it. */
function cpuFlags(): Set<string> {
  const text = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  return new Set(/^flags\s*:(.*)$/m.exec(text)?.[1]?.trim().split(/\s+/) ?? []);
}

describe('the native proof-of-work addon', () => {
  it('is built for no particular machine: no -march=native or -mtune=native in binding.gyp or the Dockerfile', () => {
    for (const file of ['binding.gyp', 'Dockerfile', 'scripts/build-native.mjs']) {
      expect(readFileSync(`${root}${file}`, 'utf8'), file).not.toMatch(/-m(arch|tune|cpu)=native/);
    }
  });

  it.skipIf(!built)(`chooses the best kernel this CPU runs, and every kernel it offers finds the vectors' nonces${built ? '' : ` (skipped: ${notBuilt})`}`, () => {
    const a = addon as Addon;
    const flags = cpuFlags();
    const expected = !x64 ? 'baseline' : flags.has('avx512f') ? 'avx512' : flags.has('avx2') ? 'avx2' : 'baseline';
    if (flags.size > 0 || !x64) expect(a.kernel).toBe(expected);
    expect(Object.keys(a.kernels)).toContain('baseline');
    expect(a.search).toBe(a.kernels[a.kernel]);
    for (const [name, search] of Object.entries(a.kernels)) {
      for (const v of vectors.work as Record<string, string>[]) {
        const nonce = BigInt(`0x${v.work}`);
        const value = BigInt(`0x${workValue(v.root as string, v.work as string)}`);
        expect(search(Buffer.from(v.root as string, 'hex'), value, nonce - 3n, 8), `${name} ${v.id}`).toMatchObject({ nonce, hashes: 4 });
      }
    }
  });

  const objdump = spawnSync('objdump', ['--version']).status === 0;
  it.skipIf(!built || !x64 || !objdump)(
    `x86-64: only the AVX2 and AVX-512 kernels (of every width) use AVX (VEX or EVEX) instructions; the rest runs on any x86-64 CPU${!built ? ` (skipped: ${notBuilt})` : !x64 ? ' (skipped: not x86-64)' : !objdump ? ' (skipped: objdump is not installed)' : ''}`,
    () => {
      const listing = spawnSync('objdump', ['-d', '--no-show-raw-insn', addonPath], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }).stdout;
      // Functions by address: "0000000000001234 <name>:" then one instruction a line ("    1234:\tvpaddq %zmm…").
      const functions = new Map<string, { name: string; lines: string[] }>();
      let current: { name: string; lines: string[] } | undefined;
      for (const line of listing.split('\n')) {
        const start = /^([0-9a-f]+) <(.+)>:$/.exec(line);
        if (start !== null) functions.set((start[1] as string).replace(/^0+/, ''), (current = { name: start[2] as string, lines: [] }));
        else if (current !== undefined && /^\s+[0-9a-f]+:\t/.test(line)) current.lines.push(line.split('\t').slice(1).join(' ').trim());
      }
      // The AVX kernels, and what they call (their own copy of the inner function, when it is not inlined).
      const allowed = new Set<string>();
      const allow = (address: string): void => {
        if (allowed.has(address)) return;
        allowed.add(address);
        for (const insn of functions.get(address)?.lines ?? []) {
          const call = /^call\s+([0-9a-f]+) </.exec(insn);
          if (call !== null && functions.has(call[1] as string)) allow(call[1] as string);
        }
      };
      const AVX = ['pow_search_avx2', 'pow_search_avx2_4', 'pow_search_avx512', 'pow_search_avx512_16'];
      const kernels = [...functions].filter(([, f]) => AVX.includes(f.name));
      expect(kernels.map(([, f]) => f.name).sort()).toEqual(AVX);
      for (const [address] of kernels) allow(address);
      const avx = (insn: string): boolean => /^v[a-z]/.test(insn) || /%[yz]mm/.test(insn);
      const elsewhere = [...functions].filter(([address, f]) => !allowed.has(address) && f.lines.some(avx)).map(([, f]) => f.name);
      expect(elsewhere).toEqual([]);
      // The baseline kernels (8 and 4 lanes) are there, and really are SSE2 code.
      for (const name of ['pow_search_baseline', 'pow_search_baseline_4']) expect([...functions.values()].some((f) => f.name === name), name).toBe(true);
    },
  );
});
