import { NanoPayError } from '../../errors.js';
import { parseHash } from '../../nano/index.js';
import { LIVE_THRESHOLDS, expectedHashes, generateWork, parseThreshold, validateWork, workEngine, workValue, type EngineName } from '../../work/index.js';
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
  engine: EngineName;
  workers: number;
  hashes_per_second: number;
}

/** How long a measurement may wait beyond its time for the reports it needs (a loaded machine starts workers slowly). */
const MEASURE_GRACE_MS = 15_000;

/**
 * Hashes per second of a kernel on `workers` threads, over about `ms` — and at least two progress
 * reports apart: a figure is never made from nothing (a slow start on a loaded machine once gave 0).
 */
export async function measure(engine: EngineName, workers: number, ms: number): Promise<EngineFigure> {
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

/** The engine in use and its speed on one and on all threads, with what that means for live blocks. */
export async function bench(input: { workers: number; ms: number; onPhase?: (threads: number) => void }) {
  const engine = workEngine();
  input.onPhase?.(1);
  const one = await measure(engine, 1, input.ms);
  input.onPhase?.(input.workers);
  const all = await measure(engine, input.workers, input.ms);
  return {
    engine,
    single_thread: one.hashes_per_second,
    all_threads: all.hashes_per_second,
    workers: input.workers,
    live_send_seconds: expectedHashes(LIVE_THRESHOLDS.send) / all.hashes_per_second,
    live_receive_seconds: expectedHashes(LIVE_THRESHOLDS.receive) / all.hashes_per_second,
  };
}
