import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { ensurePrivateDir, fsyncFd } from '../fs/secure-fs.js';
import type { Subtype } from '../nano/block.js';
import type { Thresholds } from '../work/thresholds.js';
import { profileKey } from './send-log.js';

/** A block of ours that landed, as nanopay recorded it: amounts raw, as decimal strings. */
export interface HistoryRecord {
  hash: string;
  account: string;
  subtype: Subtype;
  /** The recipient of a send, the (proved) sender of a receive. */
  counterparty?: string;
  amountRaw: string;
  balanceRaw: string;
  representative: string;
  /** When it was signed (ISO). */
  at: string;
  /** `send --id KEY`. */
  id?: string;
  /** The credits top-up this block paid (its transaction id). */
  topup?: string;
  /**
   * The rest of the signed block: with account, balanceRaw and representative
   * it is the block that hashes to `hash`. The account's newest one is its head
   * as made here (ops/ledger/recorded-head.ts). Absent in lines of versions before.
   */
  signed?: { previous: string; link: string; signature: string; work: string };
  /** The backend's work thresholds the block was made for. */
  thresholds?: Thresholds;
}

/** How much of the file is read at a time, from its end. */
const CHUNK = 64 * 1024;

/**
 * Every block of a profile's accounts that landed, one JSON line each, appended
 * (0600 file, 0700 dir): what `history` shows where the ledger's side offers no
 * account history (the service). Read newest first, a chunk at a time from the
 * end, so a long history is never held at once. A line torn by a crash is skipped.
 */
export class HistoryLog {
  constructor(private readonly dir: string) {}

  private path(profile: string): string {
    return join(this.dir, `profile-${profileKey(profile)}.ndjson`);
  }

  /** Appends a line, written synchronously (one small write, O_APPEND) and then synced to disk off the event loop. */
  async append(profile: string, record: HistoryRecord): Promise<void> {
    await ensurePrivateDir(this.dir);
    const fd = openSync(this.path(profile), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0), 0o600);
    try {
      writeSync(fd, `${JSON.stringify(record)}\n`);
      await fsyncFd(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** The profile's records, newest first; a block recorded twice (a recovered run) comes once. */
  async *newestFirst(profile: string): AsyncGenerator<HistoryRecord> {
    const handle = await open(this.path(profile), constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (handle === undefined) return;
    const seen = new Set<string>();
    try {
      let end = (await handle.stat()).size;
      let carry = Buffer.alloc(0);
      while (end > 0) {
        const start = Math.max(0, end - CHUNK);
        const chunk = Buffer.alloc(end - start);
        await handle.read(chunk, 0, chunk.length, start);
        end = start;
        const text = Buffer.concat([chunk, carry]);
        // What comes before the first newline may continue in the chunk before this one.
        const first = start > 0 ? text.indexOf(10) : -1;
        if (start > 0 && first < 0) {
          carry = text;
          continue;
        }
        carry = Buffer.from(text.subarray(0, Math.max(first, 0)));
        const lines = text.subarray(first + 1).toString('utf8').split('\n').reverse();
        for (const line of lines) {
          const record = parseLine(line);
          if (record === undefined || seen.has(record.hash)) continue;
          seen.add(record.hash);
          yield record;
        }
      }
    } finally {
      await handle.close();
    }
  }
}

function parseLine(line: string): HistoryRecord | undefined {
  if (line.trim() === '') return undefined;
  try {
    const record = JSON.parse(line) as HistoryRecord;
    return typeof record.hash === 'string' && typeof record.account === 'string' ? record : undefined;
  } catch {
    return undefined;
  }
}
