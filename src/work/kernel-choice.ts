import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { arch, availableParallelism, constants, cpus, platform, setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADDON_FILE, nativeKernels } from './engines.js';
import { timeKernel } from './generator.js';

/**
 * Which native kernel to search with, chosen by measuring each one on the
 * machine it runs on, not from the CPU's flags alone (an AVX-512 unit that
 * splits 512-bit operations can be slower than its AVX2 path). The choice is
 * kept in the config dir (work-kernel.json), with what it was measured on:
 * the CPU (model and flags) and the addon's build; another CPU or addon, or a
 * file that does not read as one, is measured again. Measuring runs in a
 * detached process at the lowest priority, so the work a payment needs now
 * never waits for it: the kernel the flags suggest serves until it is done.
 */

export interface KernelRate {
  kernel: string;
  threads: number;
  hashes_per_second: number;
}

export interface KernelChoice {
  version: 1;
  /** What it was measured on: the CPU (model and flags), the addon's build, the threads. */
  machine: string;
  addon: string;
  threads: number;
  measured_at: string;
  /** Each kernel's best rate of the rounds, on one thread and on `threads`. */
  rates: KernelRate[];
  /** The fastest kernel on one thread, and on all of them. */
  one: string;
  all: string;
}

export const CHOICE_FILE = 'work-kernel.json';

/** The fastest kernel of `rates` on `threads` threads. */
function fastest(rates: KernelRate[], threads: number): string | undefined {
  return rates.filter((r) => r.threads === threads).sort((a, b) => b.hashes_per_second - a.hashes_per_second)[0]?.kernel;
}

const sha256 = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex').slice(0, 32);

/** The CPU as a kernel's speed depends on it: its model and flags (Linux), or its model. */
function cpuDescription(): string {
  let described = cpus()[0]?.model ?? 'unknown';
  try {
    const first = readFileSync('/proc/cpuinfo', 'utf8').split('\n\n')[0] ?? '';
    const field = (name: string): string => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(first)?.[1] ?? '';
    described = `${field('model name') || described} ${field('flags')}`;
  } catch {
    // No /proc: the model alone.
  }
  return `${platform()} ${arch()} ${described}`;
}

let machine: string | undefined;
let addon: string | null | undefined;

/** The CPU the choice was made on. */
function machineId(): string {
  machine ??= sha256(cpuDescription());
  return machine;
}

/** The addon's build (a digest of the file), null without one. */
function addonId(): string | null {
  if (addon === undefined) {
    try {
      addon = sha256(readFileSync(fileURLToPath(ADDON_FILE)));
    } catch {
      addon = null;
    }
  }
  return addon;
}

/** The choice kept in `file`, if it is one made here: this CPU, this addon, as many threads, kernels it still has. */
export function readChoice(file: string): KernelChoice | undefined {
  let choice: KernelChoice;
  try {
    choice = JSON.parse(readFileSync(file, 'utf8')) as KernelChoice;
  } catch {
    return undefined;
  }
  const kernels = new Set((nativeKernels() ?? []).map((k) => k.name));
  const valid =
    typeof choice === 'object' && choice !== null && choice.version === 1 &&
    choice.machine === machineId() && choice.addon === addonId() && choice.threads === availableParallelism() &&
    kernels.has(choice.one) && kernels.has(choice.all) && Array.isArray(choice.rates);
  return valid ? choice : undefined;
}

/** Nonces each thread times per kernel and round: a few milliseconds to a hundred, whatever the kernel. */
const HASHES = 2 ** 18;
/** What a measurement may take: at least one round after the warm-up, more while there is time. */
const BUDGET_MS = 900;

/**
 * Times every native kernel this CPU runs, on one thread and on all of them,
 * for a fixed number of nonces each: a warm-up pass (the CPU's clock, the
 * workers' start), then rounds while the budget lasts; each kernel keeps the
 * best of its rounds. Undefined without the addon.
 */
export async function measureKernels(
  options: { budgetMs?: number; hashes?: number; kernels?: string[]; time?: (engine: string, threads: number, hashes: number) => Promise<number> } = {},
): Promise<KernelChoice | undefined> {
  const kernels = options.kernels ?? nativeKernels()?.map((k) => k.name);
  const build = addonId();
  if (kernels === undefined || kernels.length === 0 || build === null) return undefined;
  const time = options.time ?? timeKernel;
  const threads = availableParallelism();
  const hashes = options.hashes ?? HASHES;
  const started = Date.now();
  for (const name of kernels) await time(`native:${name}`, 1, hashes / 2);
  const best = new Map<string, KernelRate>();
  const counts = threads === 1 ? [1] : [1, threads];
  // Rounds while half the budget lasts: a round takes about as long as the ones before it.
  for (let round = 0; round === 0 || Date.now() - started < (options.budgetMs ?? BUDGET_MS) / 2; round++) {
    for (const count of counts) {
      for (const name of kernels) {
        const rate = await time(`native:${name}`, count, hashes);
        const key = `${name} ${count}`;
        if ((best.get(key)?.hashes_per_second ?? 0) < rate) best.set(key, { kernel: name, threads: count, hashes_per_second: Math.round(rate) });
      }
    }
  }
  const rates = [...best.values()];
  return {
    version: 1,
    machine: machineId(),
    addon: build,
    threads,
    measured_at: new Date().toISOString(),
    rates,
    one: fastest(rates, 1) as string,
    all: fastest(rates, threads) as string,
  };
}

/** Keeps a choice in `file` (written whole, then renamed), only where its directory is. */
export function writeChoice(file: string, choice: KernelChoice): void {
  const temporary = join(dirname(file), `.${CHOICE_FILE}.${process.pid}`);
  writeFileSync(temporary, `${JSON.stringify(choice, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}

// The measuring process beside this module: in the bundled CLI (dist/app) beside its chunk, in tsc's dist/ in work/;
// vitest runs the sources and starts tsc's copy.
const MEASURE_FILE = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../../dist/work/measure-kernels.js' : './measure-kernels.js', import.meta.url));

/** How old a measurement under way may be before another process takes it over (one that died). */
const LEASE_MS = 60_000;

/** Starts measuring into `file` in a detached process at the lowest priority, unless one already measures; `done` when it ends. */
function startMeasuring(file: string, done: () => void): void {
  const lease = `${file}.measuring`;
  try {
    if (Date.now() - statSync(lease).mtimeMs < LEASE_MS) return;
    unlinkSync(lease);
  } catch {
    // No measurement under way.
  }
  try {
    writeFileSync(lease, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
  } catch {
    return;
  }
  try {
    const child = spawn(process.execPath, [MEASURE_FILE, file, lease], { detached: true, stdio: 'ignore', env: {}, cwd: '/' });
    child.on('error', () => undefined);
    child.on('exit', done);
    if (child.pid !== undefined) setPriority(child.pid, constants.priority.PRIORITY_LOW);
    child.unref();
  } catch {
    // Not measured now: the flags' choice serves, and the next process tries again.
  }
}

/** What each process knows of a choice file: read once (again once its measurement ended); null when there was none to use. */
const known = new Map<string, KernelChoice | null>();
/** Choice files this process started a measurement for: once each. */
const measured = new Set<string>();

/**
 * The kernel for a search on `threads` threads, from the choice kept in
 * `file`; undefined while there is none made here (the kernel the CPU's flags
 * suggest then serves), and then it starts being measured, once per process:
 * a process that lives on (a server) reads the file again once that ended.
 */
export function kernelPicker(file: string): (threads: number) => string | undefined {
  return (threads) => {
    let choice = known.get(file);
    if (choice === undefined) {
      choice = readChoice(file) ?? null;
      known.set(file, choice);
      if (choice === null && !measured.has(file) && nativeKernels() !== undefined) {
        measured.add(file);
        startMeasuring(file, () => known.delete(file));
      }
    }
    if (choice === null) return undefined;
    return threads === 1 ? choice.one : choice.all;
  };
}
