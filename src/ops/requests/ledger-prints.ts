import { frontiers, receivableHashes } from '../../api/node-batch.js';
import type { NodeClient } from '../../api/node-client.js';

/**
 * Per address, what changes whenever a payment to it may have changed the status of a request there:
 * its head block (a receive, a sweep, a refund moves it) and the blocks waiting for it (confirmed ones).
 * An empty print: the ledger has nothing of the address (no block, nothing waiting), so no request there
 * has been paid. Taken in batches (two calls per 2,000 addresses), never one call per address. A print
 * only says which requests to read: their status comes from the blocks, proved (nodePaymentStatus).
 */
export async function ledgerPrints(node: NodeClient, addresses: string[]): Promise<Map<string, string>> {
  const [heads, waiting] = await Promise.all([frontiers(node, addresses), receivableHashes(node, addresses)]);
  return new Map(
    addresses.map((address) => {
      const head = heads.get(address);
      const hashes = waiting.get(address);
      return [address, head === undefined && hashes === undefined ? '' : `${head ?? 'unopened'}:${(hashes ?? []).sort().join(',')}`];
    }),
  );
}
