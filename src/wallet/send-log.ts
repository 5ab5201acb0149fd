import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { readIfExistsSync, writeFileAtomic } from '../fs/secure-fs.js';

/**
 * What a key (--id) was used for: a send (send, pay), a donation, an x402 payment (fetch), a refund of a
 * request (keyed by the refund's own id), or one account's move in a sweep (keyed by the run and the account).
 */
export type PaymentKind = 'send' | 'donate' | 'x402' | 'refund' | 'sweep' | 'topup';

/** What a completed send returns; kept so `send --id KEY` can answer a repeat. */
export interface SendRecord {
  id?: string;
  /** Absent in records of versions before kinds: such a key stands for its payment whatever the kind. */
  kind?: PaymentKind;
  hash: string;
  from: string;
  to: string;
  amountRaw: string;
  balanceRaw: string;
  at: string;
  /** A top-up's answer: the credits it bought and the balance after. */
  topup?: { credits: number; balance: number };
}

/** A landed send as versions before the spending policy kept it (now in the store). */
export interface LegacySpend {
  hash: string;
  raw: string;
  at: string;
  /** The account that sent it: the window is the profile's, over all its accounts. */
  account: string;
}

function parse<T>(path: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new NanoPayError('STORE_CORRUPT', `${path} is damaged; it was left untouched`);
  }
}

/** A file name for a profile's own records (profile names are free text). */
export function profileKey(profile: string, id = ''): string {
  return createHash('sha256').update(`${profile}\n${id}`).digest('hex').slice(0, 32);
}

/**
 * Results of sends by idempotency key. (The spends budgets count are in the
 * store; a file of spends a version before the spending policy kept is read
 * once, to move them there.)
 */
export class SendLog {
  constructor(private readonly dir: string) {}

  private resultPath(profile: string, id: string): string {
    return join(this.dir, 'ids', `${profileKey(profile, id)}.json`);
  }

  private spendPath(profile: string): string {
    return join(this.dir, 'spend', `profile-${profileKey(profile)}.json`);
  }

  async result(profile: string, id: string): Promise<SendRecord | undefined> {
    const path = this.resultPath(profile, id);
    const text = readIfExistsSync(path);
    return text === undefined ? undefined : parse<SendRecord>(path, text);
  }

  async saveResult(profile: string, id: string, record: SendRecord): Promise<void> {
    await writeFileAtomic(this.resultPath(profile, id), JSON.stringify(record, null, 2));
  }

  /** The spends a version before the policy kept for the profile, if its file is still there. */
  async legacySpends(profile: string): Promise<LegacySpend[] | undefined> {
    const path = this.spendPath(profile);
    const text = readIfExistsSync(path);
    return text === undefined ? undefined : parse<LegacySpend[]>(path, text);
  }

  async forgetLegacySpends(profile: string): Promise<void> {
    await rm(this.spendPath(profile), { force: true });
  }
}
