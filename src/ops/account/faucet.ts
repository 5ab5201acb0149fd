import { ApiClient } from '../../api/client.js';
import { normalizeAddress, rawToXno, xnoToRaw } from '../../nano/index.js';
import type { Session } from '../session.js';

/** Test funds from the sandbox's faucet (a real service has none): to any address, or the active account. On a node backend, the sandbox is the node. */
export async function fundFromFaucet(session: Session, input: { address?: string; amount: string }) {
  const address = input.address === undefined ? await session.address() : normalizeAddress(input.address);
  xnoToRaw(input.amount);
  const faucet = session.backendKind() === 'node' ? new ApiClient({ baseUrl: session.nodeUrl() }) : session.anonymousApi();
  const funded = await faucet.fund(address, input.amount);
  return { address, hash: funded.hash, amount: rawToXno(funded.amountRaw), amount_raw: funded.amountRaw.toString() };
}
