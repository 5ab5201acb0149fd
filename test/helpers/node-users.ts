import { expect } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { newUser, type CliUser } from './cli.js';
import { fund } from './sandbox.js';

/**
 * A merchant and a customer on the sandbox's node side, each with a wallet made on this
 * machine; the customer funded with 10 XNO and received.
 */
export async function nodeMerchantAndCustomer(sb: RunningSandbox, env: NodeJS.ProcessEnv): Promise<{ merchant: CliUser; customer: CliUser; merchantAddress: string }> {
  const merchant = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, ...env });
  const customer = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, ...env });
  const merchantAddress = (await merchant.json<{ address: string }>(['wallet', 'create'])).address;
  const customerAddress = (await customer.json<{ address: string }>(['wallet', 'create'])).address;
  await fund(sb.url, customerAddress, '10');
  expect((await customer.json(['receive']))._code).toBe(0);
  return { merchant, customer, merchantAddress };
}
