import { join } from 'node:path';
import type { Session } from '../ops/session.js';
import { stateDir } from '../wallet/paths.js';
import { NanoSettler, type FacilitatorOptions } from './facilitator.js';
import { FileSettlementRecord } from './settlements.js';

/**
 * A settler on the profile's ledger backend (a node, or the service) with the
 * settlement record under the profile's config dir. It needs no key: the
 * facilitator and the paywall hold no seed.
 */
export async function profileSettler(session: Session, options: FacilitatorOptions = {}): Promise<NanoSettler> {
  return new NanoSettler(await session.api(), new FileSettlementRecord(join(stateDir(session.dir, 'x402'), 'settlements')), options);
}
