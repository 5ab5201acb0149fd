import { expect } from 'vitest';
import { xnoToRaw } from '../../../src/nano/index.js';
import { receive } from '../../../src/ops/account/receive.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import { userSession } from './backend-users.js';
import { newUser, type CliUser } from '../processes/cli.js';
import { fund } from './sandbox.js';

/**
 * A merchant and a customer on the sandbox's node side, each with a wallet made on this
 * machine; the customer funded with 10 XNO and received. Made in-process (no child
 * process): making wallets and receiving is not what the tests using this are about.
 */
export async function nodeMerchantAndCustomer(sb: RunningSandbox, env: NodeJS.ProcessEnv): Promise<{ merchant: CliUser; customer: CliUser; merchantAddress: string }> {
  const merchant = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, ...env });
  const customer = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, ...env });
  const merchantAddress = (await createWallet(userSession(merchant))).address;
  const customerAddress = (await createWallet(userSession(customer))).address;
  await fund(sb.url, customerAddress, '10');
  expect((await receive(userSession(customer))).total_raw).toBe(xnoToRaw('10').toString());
  return { merchant, customer, merchantAddress };
}
