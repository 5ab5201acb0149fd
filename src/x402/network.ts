import type { LedgerBackend } from '../api/backend.js';
import { NanoPayError } from '../errors.js';

/** The live network's x402 (CAIP-2) name. */
const MAINNET = 'nano:mainnet';

/** The x402 name of a Nano network as a node's `version` names it: "live" is nano:mainnet, any other nano:<name>. */
function x402Network(node: string): string {
  return node === 'live' ? MAINNET : `nano:${node}`;
}

/** A network name as given (--network, x402-network): nano:mainnet, nano:beta, nano:dev… */
export function parseNetwork(name: string, from: string): string {
  if (!/^nano:[a-z0-9-]{1,32}$/.test(name)) throw new NanoPayError('USAGE', `${from} must name a Nano network such as nano:mainnet or nano:dev, not "${name}"`);
  return name;
}

/**
 * The network a backend settles on, in x402's words: what it says (the
 * service: live, the sandbox: its own; a node: its `version`), else `named`
 * (--network, the x402-network setting) where a node does not say. Both given
 * must agree: test money is never named mainnet, nor real money test money.
 */
export async function backendNetwork(ledger: Pick<LedgerBackend, 'network'>, named: string | undefined): Promise<string> {
  const said = await ledger.network();
  const own = said === null ? undefined : x402Network(said);
  if (own !== undefined && named !== undefined && own !== named) {
    throw new NanoPayError('USAGE', `The backend settles on ${own}, but ${named} was named (--network or x402-network); nothing was done`, {
      hint: `Name ${own}, or none: nanopay config set x402-network --unset`,
    });
  }
  const network = own ?? named;
  if (network === undefined) {
    throw new NanoPayError('USAGE', 'The node does not say which Nano network it is on (its version has no "network"), so x402 cannot name it; nothing was done', {
      hint: 'Name it: --network nano:mainnet (paywall, facilitator) or nanopay config set x402-network nano:mainnet',
    });
  }
  return network;
}
