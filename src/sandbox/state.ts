import { NanoPayError } from '../errors.js';
import { readIfExists, writeFileAtomic } from '../wallet/secure-fs.js';
import type { LedgerSnapshot } from './ledger.js';

export interface PaymentRequestRecord {
  receiveAddress: string;
  amountRaw: string;
  redirectUrl: string;
  createdAt: number;
  paidBy: string | null;
}

export interface TopupRecord {
  tier: number;
  apiKey: string;
  paymentAddress: string;
  amountRaw: string;
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

export async function loadState(path: string): Promise<SandboxState | undefined> {
  const text = await readIfExists(path);
  if (text === undefined) return undefined;
  try {
    const state = JSON.parse(text) as SandboxState;
    if (state.version !== 1 || !Array.isArray(state.ledger?.blocks)) throw new Error('unknown format');
    return state;
  } catch (error) {
    throw new NanoPayError('STORE_CORRUPT', `The sandbox state ${path} is damaged (${(error as Error).message}); it was left untouched`, {
      hint: 'Move it away to start with a fresh ledger.',
    });
  }
}

/** Saves are serialized and atomic: a crash leaves the previous complete state. */
export class StateWriter {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly path: string | undefined) {}

  save(state: () => SandboxState): Promise<void> {
    if (this.path === undefined) return Promise.resolve();
    const path = this.path;
    this.chain = this.chain.then(() => writeFileAtomic(path, JSON.stringify(state())));
    return this.chain;
  }
}
