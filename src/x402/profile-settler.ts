import { join } from 'node:path';
import type { Session } from '../ops/session.js';
import { stateDir } from '../wallet/paths.js';
import { confirmations, type LiveFeed } from '../ops/ledger/confirmations.js';
import { NanoSettler, type FacilitatorOptions } from './facilitator.js';
import { FileSettlementRecord } from './settlements.js';

/**
 * The node's WebSocket confirmations (when one is known, node-ws-url), for
 * the settler's waits: each block awaited follows its payer's account until
 * it is done; a (re)connect wakes every wait, to read at once.
 */
function confirmationsOf(session: Session): FacilitatorOptions['confirmation'] {
  if (session.nodeWsUrl() === undefined) return undefined;
  const waiting = new Map<string, { account: string; wake: () => void }>();
  let feed: Promise<LiveFeed | undefined> | undefined;
  const follow = (): void => void feed?.then((f) => f?.follow([...new Set([...waiting.values()].map((w) => w.account))]));
  return (hash, account) => {
    feed ??= confirmations(
      session,
      [],
      (c) => {
        for (const [awaited, w] of waiting) if (c === undefined || c.hash === awaited) w.wake();
      },
      (c) => waiting.has(c.hash),
    );
    let wake = (): void => undefined;
    const seen = new Promise<void>((resolve) => (wake = resolve));
    waiting.set(hash, { account, wake });
    follow();
    return {
      seen,
      done: () => {
        waiting.delete(hash);
        follow();
      },
    };
  };
}

/** Where a paywall keeps paid answers by payment id (one file each). */
export function answersDir(session: Session): string {
  return join(stateDir(session.dir, 'x402'), 'answers');
}

/** The settlement record's dir (one file per claimed previous). */
export function settlementsDir(session: Session): string {
  return join(stateDir(session.dir, 'x402'), 'settlements');
}

/**
 * A settler on the profile's ledger backend (a node, or the service) with the
 * settlement record under the profile's config dir, on the network the
 * backend settles on (or the one named: `network`, else x402-network, for a
 * node that does not say). It needs no key: the facilitator and the paywall
 * hold no seed. Its network is checked here, so a server never starts under
 * a wrong name.
 */
export async function profileSettler(session: Session, options: FacilitatorOptions = {}): Promise<NanoSettler> {
  const network = options.network ?? session.profile().x402Network;
  const confirmation = confirmationsOf(session);
  const settler = new NanoSettler(await session.api(), new FileSettlementRecord(settlementsDir(session)), {
    ...(confirmation === undefined ? {} : { confirmation }),
    ...options,
    ...(network === undefined ? {} : { network }),
  });
  await settler.network();
  return settler;
}
