import { setTimeout as sleep } from 'node:timers/promises';
import type { LedgerBackend } from '../../api/backend.js';
import { hashBlock } from '../../nano/index.js';

/**
 * Whether block `hash` is seen confirmed within `waitMs` (read every 100 ms; 0: one look), its contents
 * checked against its hash. A node lists only confirmed blocks as receivable, and sellers refuse a payment
 * on an unconfirmed frontier: what follows a block of ours waits for this.
 */
export async function seenConfirmed(api: LedgerBackend, hash: string, waitMs: number, signal?: AbortSignal): Promise<boolean> {
  const until = Date.now() + waitMs;
  for (;;) {
    const info = await api.blockInfo(hash).catch(() => undefined);
    if (info?.confirmed === true && hashBlock(info.contents) === hash) return true;
    if (Date.now() >= until || signal?.aborted === true) return false;
    await sleep(100);
  }
}
