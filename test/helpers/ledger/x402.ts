import { buildSendBlock, linkAsAccount, type Account, type StateBlock } from '../../../src/nano/index.js';
import { NodeClient } from '../../../src/api/node-client.js';
import { NanoSettler } from '../../../src/x402/facilitator.js';
import { nanoRequirement } from '../../../src/x402/nano-exact.js';
import { FileSettlementRecord } from '../../../src/x402/settlements.js';
import type { PaymentPayload, PaymentRequirements } from '../../../src/x402/protocol.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import type { CliUser } from '../processes/cli.js';
import { newAccount, type SandboxClient } from './chain.js';
import { nodeMerchantAndCustomer } from './node-users.js';
import { startCommand, type RunningCommand } from '../processes/serve.js';
import { tempDir } from '../processes/temp.js';

/** A payer opened on the sandbox with `xno` XNO, and a fresh payee. */
export async function payerAndPayee(client: SandboxClient, xno = '1'): Promise<{ payer: Account; payee: Account }> {
  const payer = newAccount();
  await client.fund(payer.address, xno);
  await client.receiveAll(payer);
  return { payer, payee: newAccount() };
}

/** The requirement a server on this sandbox states: its network (nano:dev), its send threshold in extra. */
export async function requirementOn(client: SandboxClient, payTo: string, amountRaw: bigint): Promise<PaymentRequirements> {
  return nanoRequirement(payTo, amountRaw, 'nano:dev', (await client.advertisedThresholds()).send);
}

/** The payment a client would make: a signed, worked, unpublished send with `link_as_account`; `tweak` edits the block before signing. */
export async function paymentFor(client: SandboxClient, payer: Account, requirements: PaymentRequirements, tweak: (b: StateBlock) => StateBlock = (b) => b): Promise<PaymentPayload> {
  const unsigned = tweak(buildSendBlock(await client.head(payer), { to: requirements.payTo, amount: BigInt(requirements.amount) }));
  const block = await client.complete(unsigned, payer, 'send');
  return { x402Version: 2, accepted: requirements, payload: { block: { ...block, link_as_account: linkAsAccount(block.link) } } };
}

/** A settler on the sandbox's node side with a record in a new temporary directory (removed after the test file). */
export async function sandboxSettler(url: string): Promise<{ settler: NanoSettler; dir: string; node: NodeClient }> {
  const dir = await tempDir('nanopay-x402-');
  const node = new NodeClient({ url });
  return { settler: new NanoSettler(node, new FileSettlementRecord(dir), { pollMs: 10 }), dir, node };
}

/** A merchant running `nanopay paywall` in front of `upstream` at `price` XNO (GET /free free), and a customer holding 10 XNO, on the sandbox's node side. */
export async function paywallShop(sb: RunningSandbox, upstream: string, price: string): Promise<{ merchant: CliUser; customer: CliUser; merchantAddress: string; paywall: RunningCommand<{ url: string; pay_to: string; price_raw: string }> }> {
  const { merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {});
  const paywall = await startCommand<{ url: string; pay_to: string; price_raw: string }>(['paywall', '--upstream', upstream, '--price', price, '--route', 'GET /free=0', '--to', merchantAddress, '--json'], merchant.env);
  return { merchant, customer, merchantAddress, paywall };
}
