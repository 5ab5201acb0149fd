import { renameSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import type { StateBlock, Subtype } from '../nano/block.js';
import { readIfExistsSync, writeFileAtomic } from '../fs/secure-fs.js';
import type { Thresholds } from '../work/thresholds.js';
import type { PaymentKind } from './send-log.js';

/**
 * The journal of signed blocks: one entry per account, written and fsynced
 * before a block is published, cleared once the ledger shows its fate. After a
 * crash the same block is republished, so no second block is ever signed on
 * the same previous.
 */
export interface JournalEntry {
  hash: string;
  subtype: Subtype;
  block: StateBlock;
  createdAt: string;
  /** The backend's work thresholds the block was made for (absent in entries of versions before): the history keeps them with it. */
  thresholds?: Thresholds;
  /** For sends: the amount, so a recovered send still counts toward the daily limit. */
  amountRaw?: string;
  /** For receives: the proved sender, for the history. */
  counterparty?: string;
  /** `send --id KEY`: the result is recorded under this key once the block lands. */
  sendId?: string;
  /** What `sendId` is the key of (absent in entries of versions before kinds). */
  sendKind?: PaymentKind;
  /** For sends: the profile whose daily limit it counts toward (in flight until recorded). */
  profile?: string;
  /** A credits top-up paid by this block, to be submitted with its transaction id. */
  topupTransactionId?: string;
  /** The service's answer to the top-up, kept until the result has been reported, so a rerun never pays twice. */
  topupResult?: TopupAnswer;
  /**
   * A cheque: the send was handed to this x402 server (URL) to publish, not
   * published by us. Until the ledger shows it, it is resolved before the
   * account moves again: presented again under its `sendId`, or superseded.
   */
  chequeFor?: string;
  /** A send between the wallet's own accounts (a payment lane funded or emptied): no spend, never counted toward budgets. */
  ownTransfer?: true;
  /** The cheque this block (a change on the same previous) cancels: if the cheque landed first after all, it is recorded as paid. */
  supersedes?: JournalEntry;
}

export interface TopupAnswer {
  toppedUp: number;
  newBalance: number;
}

export class Journal {
  constructor(private readonly dir: string) {}

  private path(address: string): string {
    return join(this.dir, `${address}.json`);
  }

  async read(address: string): Promise<JournalEntry | undefined> {
    const text = readIfExistsSync(this.path(address));
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as JournalEntry;
    } catch {
      throw new NanoPayError('STORE_CORRUPT', `The journal entry ${this.path(address)} is damaged; it was left untouched`, {
        hint: 'It holds a signed block that may not have been published. Inspect it before removing it.',
      });
    }
  }

  /** Every entry of the config dir: blocks signed and not yet settled, of any account. */
  async all(): Promise<JournalEntry[]> {
    const names = await readdir(this.dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [] as string[];
      throw error;
    });
    const entries = await Promise.all(names.filter((n) => /^(nano|xrb)_\w+\.json$/.test(n)).map((n) => this.read(n.slice(0, -'.json'.length))));
    return entries.filter((e): e is JournalEntry => e !== undefined);
  }

  /** Where a cleared entry's file waits to hold the account's next one: a name the journal never reads (dot file). */
  private spare(address: string): string {
    return join(this.dir, `.${address}.spare`);
  }

  async record(address: string, entry: JournalEntry): Promise<void> {
    await writeFileAtomic(this.path(address), JSON.stringify(entry, null, 2), { spare: this.spare(address) });
  }

  /**
   * Takes the account's entry out once its block's fate is recorded: renamed
   * to the account's spare, whose file the next entry is written through (no
   * new file for each payment). Not synced to disk: an entry a power cut
   * brings back is settled again by the next command (found landed and
   * recorded once more, which changes nothing, or found refused), so the
   * fsync would buy nothing on every payment.
   */
  async clear(address: string): Promise<void> {
    try {
      renameSync(this.path(address), this.spare(address));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}
