import type { AuditRecord } from '../../store/spending.js';
import type { Session } from '../session.js';

const PAGE = 1000;

/**
 * The profile's audit trail, oldest first, from `sinceMs`: every spending
 * decision (allowed, approved, denied, held for approval, declined) with its
 * front end, recipient or host, amount, rule and block. Read a page at a time
 * (keyset on the record's seq), so the whole trail is never held in memory.
 */
export async function* auditTrail(session: Session, options: { sinceMs?: number } = {}): AsyncGenerator<AuditRecord> {
  const store = await session.dataStore();
  let afterSeq = 0;
  for (;;) {
    const page = await store.audit.page({ profile: session.profileName, afterSeq, limit: PAGE, ...(options.sinceMs === undefined ? {} : { sinceMs: options.sinceMs }) });
    yield* page;
    if (page.length < PAGE) return;
    afterSeq = page.at(-1)?.seq as number;
  }
}
