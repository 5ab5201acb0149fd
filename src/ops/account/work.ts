import { NanoPayError } from '../../errors.js';
import { parseHash } from '../../nano/index.js';
import { join } from 'node:path';
import {
  CHOICE_FILE,
  LIVE_THRESHOLDS,
  expectedHashes,
  generateWork,
  measureKernels,
  nativeKernels,
  parseThreshold,
  readChoice,
  validateWork,
  workEngine,
  workValue,
  writeChoice,
  type EngineName,
  type KernelRate,
} from '../../work/index.js';
import { serviceThresholds } from '../ledger/chain.js';
import { nextWork } from './precache.js';
import type { Session } from '../session.js';

/** A threshold given as hex, or the service's for a subtype (live base values when it does not say). */
export async function resolveThreshold(session: Session, input: { threshold?: string; subtype?: 'send' | 'receive' }): Promise<string> {
  if (input.threshold !== undefined) {
    parseThreshold(input.threshold);
    return input.threshold.toLowerCase();
  }
  if (input.subtype === undefined) throw new NanoPayError('USAGE', 'Give --threshold HEX or --subtype send|receive');
  return (await serviceThresholds(await session.api())).thresholds[input.subtype];
}

export async function generate(session: Session, input: { root: string; threshold: string; signal?: AbortSignal }) {
  const root = parseHash(input.root, 'Work root');
  const started = Date.now();
  const work = await session.work()(root, input.threshold, input.signal);
  return { root, threshold: input.threshold, work, value: workValue(root, work), seconds: (Date.now() - started) / 1000 };
}

export function validate(input: { root: string; work: string; threshold: string }) {
  const root = parseHash(input.root, 'Work root');
  const value = workValue(root, input.work);
  return { root, work: input.work.toLowerCase(), threshold: input.threshold.toLowerCase(), value, valid: validateWork(root, input.work, input.threshold) };
}

/** Makes and stores the work for the active account's next block, so its next command does not wait. */
export async function precache(session: Session, signal?: AbortSignal) {
  const { root, threshold } = await nextWork(session);
  const work = await session.work()(root, threshold, signal);
  await session.workStore.put(root, threshold, work);
  return { root, threshold, work };
}

/**
 * Makes and stores the work for the block that will follow `hash` (an account's
 * new frontier, just made by a payment), at the send threshold (which covers a
 * receive too): the next payment does not wait for it.
 */
export async function precacheAfter(session: Session, hash: string, signal?: AbortSignal) {
  const root = parseHash(hash, 'Frontier');
  const threshold = await resolveThreshold(session, { subtype: 'send' });
  const work = await session.work()(root, threshold, signal);
  await session.workStore.put(root, threshold, work);
  return { root, threshold, work };
}

export interface EngineFigure {
  engine: EngineName | `native:${string}`;
  workers: number;
  hashes_per_second: number;
}

/** How long a measurement may wait beyond its time for the reports it needs (a loaded machine starts workers slowly). */
const MEASURE_GRACE_MS = 15_000;

/**
 * Hashes per second of a kernel on `workers` threads, over about `ms` — and at least two progress
 * reports apart: a figure is never made from nothing (a slow start on a loaded machine once gave 0).
 */
export async function measure(engine: EngineFigure['engine'], workers: number, ms: number): Promise<EngineFigure> {
  const controller = new AbortController();
  const started = Date.now();
  let first: { at: number; hashes: number } | undefined;
  let last: { at: number; hashes: number } | undefined;
  let done: () => void = () => undefined;
  const enough = new Promise<void>((resolve) => (done = resolve));
  const search = generateWork('0'.repeat(64), 'ffffffffffffffff', {
    engine,
    workers,
    signal: controller.signal,
    onProgress: (hashes) => {
      // Count from the first report on, so worker start-up does not lower the figure.
      const report = { at: Date.now(), hashes };
      first ??= report;
      last = report;
      if (report.at > first.at && report.at - started >= ms) done();
    },
  });
  const timer = setTimeout(done, ms + MEASURE_GRACE_MS);
  await enough;
  clearTimeout(timer);
  controller.abort();
  await search.catch(() => undefined);
  if (first === undefined || last === undefined || last.at === first.at) {
    throw new NanoPayError('TIMEOUT', `The ${engine} kernel reported no progress within ${Math.round((ms + MEASURE_GRACE_MS) / 1000)} s; no figure to give`);
  }
  return { engine, workers, hashes_per_second: Math.round(((last.hashes - first.hashes) * 1000) / (last.at - first.at)) };
}

/** The native kernels measured on this machine (`nanopay work bench`): each one's rate, and the ones chosen. */
export interface KernelTable {
  /** How the kernels in use were picked: measured here, or from the CPU's flags (no measurement yet). */
  chosen_by: 'measurement' | 'cpu flags';
  measured_at: string | null;
  one: string;
  all: string;
  rates: KernelRate[];
}

/**
 * The kernels of this machine: the choice kept in the config dir (measured
 * again with `choose`), else the one the CPU's flags suggest; undefined where
 * the engine is not the native one.
 */
async function kernelTable(session: Session, choose: boolean): Promise<KernelTable | undefined> {
  const kernels = nativeKernels();
  if (kernels === undefined || workEngine() !== 'native') return undefined;
  const file = join(session.dir, CHOICE_FILE);
  let choice = readChoice(file);
  if (choose) {
    choice = await measureKernels();
    if (choice !== undefined) writeChoice(file, choice);
  }
  if (choice === undefined) {
    const flags = (kernels[0] as { name: string }).name;
    return { chosen_by: 'cpu flags', measured_at: null, one: flags, all: flags, rates: [] };
  }
  return { chosen_by: 'measurement', measured_at: choice.measured_at, one: choice.one, all: choice.all, rates: choice.rates };
}

/**
 * The engine in use and its speed on one and on all threads, with what that
 * means for live blocks; on the native engine, the kernels measured here and
 * the ones chosen (`choose`: measured again first, and kept).
 */
export async function bench(session: Session, input: { workers: number; ms: number; choose?: boolean; onPhase?: (threads: number) => void }) {
  const engine = workEngine();
  const kernels = await kernelTable(session, input.choose === true);
  input.onPhase?.(1);
  const one = await measure(kernels === undefined ? engine : `native:${kernels.one}`, 1, input.ms);
  input.onPhase?.(input.workers);
  const all = await measure(kernels === undefined ? engine : `native:${kernels.all}`, input.workers, input.ms);
  return {
    engine,
    kernels: kernels ?? null,
    single_thread: one.hashes_per_second,
    all_threads: all.hashes_per_second,
    workers: input.workers,
    live_send_seconds: expectedHashes(LIVE_THRESHOLDS.send) / all.hashes_per_second,
    live_receive_seconds: expectedHashes(LIVE_THRESHOLDS.receive) / all.hashes_per_second,
  };
}
