import { NanoPayError } from '../errors.js';
import { readIfExists, writeFileAtomic } from '../fs/secure-fs.js';
import type { LedgerSnapshot } from './ledger.js';

export interface PaymentRequestRecord {
  receiveAddress: string;
  amountRaw: string;
  redirectUrl: string;
  createdAt: number;
  /** Hash of the send that paid it. */
  paidBy: string | null;
}

export interface TopupRecord {
  tier: number;
  apiKey: string;
  paymentAddress: string;
  amountRaw: string;
  /** Blocks in the ledger when the offer was made: only a later block can pay it. */
  ledgerSize: number;
  /** The block that paid it, once credited: a retry answers the same result. */
  paidBy: string | null;
  newBalance: number | null;
}

/** Everything the sandbox keeps; bigints are strings so it is plain JSON. */
export interface SandboxState {
  version: 1;
  thresholds: 'dev' | 'live';
  genesisKey: string;
  serviceKey: string;
  apiKeys: Record<string, { credits: number; createdAt: number }>;
  payments: Record<string, PaymentRequestRecord>;
  topups: Record<string, TopupRecord>;
  ledger: LedgerSnapshot;
}

/** The error for a state file that cannot be used; the file is never replaced. */
export function corruptState(path: string, reason: string): NanoPayError {
  return new NanoPayError('STORE_CORRUPT', `The sandbox state ${path} is damaged (${reason}); it was left untouched`, {
    hint: 'Move it away (or pick another --data-dir) to start with a fresh ledger.',
  });
}

export async function loadState(path: string): Promise<SandboxState | undefined> {
  const text = await readIfExists(path);
  if (text === undefined) return undefined;
  let state: Partial<SandboxState>;
  try {
    state = JSON.parse(text) as Partial<SandboxState>;
  } catch (error) {
    throw corruptState(path, (error as Error).message);
  }
  const wellFormed =
    typeof state === 'object' &&
    state !== null &&
    state.version === 1 &&
    typeof state.genesisKey === 'string' &&
    typeof state.serviceKey === 'string' &&
    [state.apiKeys, state.payments, state.topups].every((map) => typeof map === 'object' && map !== null) &&
    Array.isArray(state.ledger?.blocks);
  if (!wellFormed) throw corruptState(path, 'not a sandbox state of version 1');
  return state as SandboxState;
}

/**
 * Saves are serialized and atomic (temp file, fsync, rename, fsync of the
 * directory): a crash leaves the previous complete state. A failed save fails
 * its caller and does not block the saves after it.
 */
export class StateWriter {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly path: string | undefined) {}

  save(state: () => SandboxState): Promise<void> {
    if (this.path === undefined) return Promise.resolve();
    const path = this.path;
    const write = (): Promise<void> => writeFileAtomic(path, JSON.stringify(state()));
    const saved = this.chain.then(write);
    this.chain = saved.catch(() => undefined);
    return saved;
  }
}
