import { ApiClient } from '../api/client.js';
import { deriveAccount, generateSeed, rawToXno, xnoToRaw } from '../nano/index.js';
import { receiveAllPending, sendFromAccount } from '../ops/chain.js';
import type { OpsContext } from '../ops/context.js';
import { startSandbox } from '../sandbox/index.js';
import { generateWork } from '../work/index.js';

/**
 * The demo: everything end to end against the embedded sandbox, offline and
 * with no configuration. Two accounts, a faucet, open, send and receive.
 */
async function main(): Promise<void> {
  const sandbox = await startSandbox({ port: 0 });
  const say = (line: string): void => void process.stdout.write(`${line}\n`);
  try {
    say(`Sandbox running at ${sandbox.url} (dev thresholds, in memory)`);
    const anonymous = new ApiClient({ baseUrl: sandbox.url });
    const created = await anonymous.createWallet();
    const ctx: OpsContext = { api: anonymous.withApiKey(created.apiKey), work: (root, threshold, signal) => generateWork(root, threshold, { signal }) };

    const alice = deriveAccount({ privateKey: created.privateKey });
    const bob = deriveAccount({ seed: generateSeed(), index: 0 });
    say(`Alice (made by the service): ${alice.address}`);
    say(`Bob   (made locally):        ${bob.address}`);

    const funded = await ctx.api.fund(alice.address, '10');
    say(`Faucet sent ${rawToXno(funded.amountRaw)} XNO to Alice (block ${funded.hash})`);

    const opened = await receiveAllPending(ctx, alice);
    for (const r of opened) say(`Alice ${r.subtype}: ${rawToXno(r.amountRaw)} XNO (block ${r.hash})`);

    const sent = await sendFromAccount(ctx, alice, bob.address, xnoToRaw('2.5'));
    say(`Alice sent ${rawToXno(sent.amountRaw)} XNO to Bob (block ${sent.hash}); Alice now has ${rawToXno(sent.balanceRaw)} XNO`);

    const bobReceived = await receiveAllPending(ctx, bob);
    for (const r of bobReceived) say(`Bob ${r.subtype}: ${rawToXno(r.amountRaw)} XNO (block ${r.hash})`);

    const back = await sendFromAccount(ctx, bob, alice.address, xnoToRaw('0.5'));
    say(`Bob sent ${rawToXno(back.amountRaw)} XNO back to Alice (block ${back.hash})`);
    for (const r of await receiveAllPending(ctx, alice)) say(`Alice ${r.subtype}: ${rawToXno(r.amountRaw)} XNO (block ${r.hash})`);

    say('');
    say('Balances:');
    for (const [name, account] of [['Alice', alice], ['Bob', bob]] as const) {
      const b = await ctx.api.balance(account.address);
      say(`  ${name.padEnd(5)} ${rawToXno(b.balanceRaw).padStart(8)} XNO  (${b.balanceRaw} raw, pending ${b.pendingRaw} raw)`);
    }

    say('');
    say('Ledger:');
    const ledger = (await (await fetch(`${sandbox.url}/sandbox/ledger`)).json()) as { data: { blocks: LedgerBlock[] } };
    for (const b of ledger.data.blocks) {
      say(`  #${b.height} ${b.subtype.padEnd(7)} ${b.hash.slice(0, 16)}… ${short(b.account)} amount ${rawToXno(BigInt(b.amount))} XNO, balance ${rawToXno(BigInt(b.balance))} XNO`);
    }
    say('');
    say('Demo complete.');
  } finally {
    await sandbox.close();
  }
}

interface LedgerBlock {
  hash: string;
  account: string;
  subtype: string;
  amount: string;
  balance: string;
  height: number | string;
}

function short(address: string): string {
  return `${address.slice(0, 11)}…${address.slice(-6)}`;
}

main().catch((error: unknown) => {
  const e = error as { code?: string; message?: string };
  process.stderr.write(`Demo failed: ${e.code ?? 'ERROR'} ${e.message ?? String(error)}\n`);
  process.exitCode = 1;
});
