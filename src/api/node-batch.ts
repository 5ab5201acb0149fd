import { NanoPayError } from '../errors.js';
import type { NodeClient } from './node-client.js';
import { asObject } from './shape.js';

/**
 * Accounts per call of the node's `accounts_*` actions. The reference node (V27.1) answers 1,000 in about
 * 15 ms and 5,000 in about 50 ms (measured here), one read transaction each: 2,000 keeps a call short
 * for a busy node and its body (about 140 KB) far below its 32 MiB `max_request_size`.
 */
const BATCH_ACCOUNTS = 2_000;

const HASH = /^[0-9a-fA-F]{64}$/;

/** The node names an account `nano_…` whatever prefix it was asked with: the key it is asked by. */
function asked(key: string): string {
  return `nano_${key.slice(key.indexOf('_') + 1)}`;
}

function invalid(action: string, expected: string): NanoPayError {
  return new NanoPayError('INVALID_DATA', `The node answered ${action} with an unexpected shape: ${expected}`);
}

/** `run` over `accounts` in calls of BATCH_ACCOUNTS, one after another (a node is not sent them all at once). */
async function inBatches(accounts: string[], run: (batch: string[]) => Promise<void>): Promise<void> {
  for (let i = 0; i < accounts.length; i += BATCH_ACCOUNTS) await run(accounts.slice(i, i + BATCH_ACCOUNTS));
}

/**
 * The hashes of the blocks waiting for each account (confirmed ones, as the node counts by default), by
 * `accounts_receivable` (`accounts_pending` on nodes that lack it): at most 1000 each, of at least
 * `minimumRaw`, as `receivable` is asked for one account. Accounts with none are absent.
 */
export async function receivableHashes(node: NodeClient, accounts: string[], minimumRaw = 1n): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  await inBatches(accounts, async (batch) => {
    const answer = await node.rpcOrOlder('accounts_receivable', 'accounts_pending', { accounts: batch, count: '1000', threshold: minimumRaw.toString(), source: 'true' });
    // "" when no account has any (as `receivable` answers for one).
    if (answer.blocks === '' || answer.blocks === undefined) return;
    for (const [account, blocks] of Object.entries(asObject(answer.blocks, 'accounts_receivable'))) {
      // With a threshold: hash → {amount, source}; a node ignoring it may give a list of hashes.
      const hashes = Array.isArray(blocks) ? blocks : Object.keys(asObject(blocks, 'accounts_receivable'));
      if (!hashes.every((h) => typeof h === 'string' && HASH.test(h))) throw invalid('accounts_receivable', '"blocks" should list block hashes per account');
      found.set(asked(account), (hashes as string[]).map((h) => h.toUpperCase()));
    }
  });
  return found;
}

/**
 * The head block of each account the node has (`accounts_frontiers`; an unopened account is in its
 * `errors`, as "Account not found", and absent here). Unconfirmed heads count: a block just received changes it.
 */
export async function frontiers(node: NodeClient, accounts: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  await inBatches(accounts, async (batch) => {
    const answer = await node.rpc('accounts_frontiers', { accounts: batch });
    // Absent when the node has none of them (they are all in "errors").
    if (answer.frontiers === undefined || answer.frontiers === '') return;
    for (const [account, head] of Object.entries(asObject(answer.frontiers, 'accounts_frontiers'))) {
      if (typeof head !== 'string' || !HASH.test(head)) throw invalid('accounts_frontiers', '"frontiers" should map accounts to block hashes');
      found.set(asked(account), head.toUpperCase());
    }
  });
  return found;
}
