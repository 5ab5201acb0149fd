import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSeed, deriveAccount } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { SendLog, type SendRecord } from '../../../src/wallet/send-log.js';
import { stateDir } from '../../../src/wallet/paths.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand } from '../../helpers/processes/serve.js';

/**
 * Issue 31, point 12: one --id is one payment of one kind. A key first used for a send and then given
 * to donate (or the other way) is refused naming the first use; nothing is signed. A key recorded by
 * an earlier version (no kind) still protects the payment it was used for.
 */
let sb: RunningSandbox;
let payer: BackendUser;
const payee = deriveAccount({ seed: generateSeed(), index: 0 }).address;

beforeAll(async () => {
  sb = await sandbox();
  payer = await fundedUser(sb, 'service', '5');
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

type Refusal = { error: { code: string; message: string; hint: string } };

async function blocks(): Promise<number> {
  return (await ledger(sb.url)).blocks.length;
}

describe('--id across kinds of payment', () => {
  it('a key of a send, given to donate, is refused naming the send; nothing is donated', async () => {
    const sent = await payer.user.json<{ hash: string }>(['send', payee, '0.1', '--yes', '--id', 'order-7']);
    expect(sent._code).toBe(0);
    const before = await blocks();
    const donated = await payer.user.json<Refusal>(['donate', '0.1', '--yes', '--id', 'order-7']);
    expect(donated._code).toBe(10);
    expect(donated.error.code).toBe('IDEMPOTENCY_MISMATCH');
    expect(donated.error.message).toContain('a send of 0.1 XNO');
    expect(donated.error.message).toContain(payee);
    expect(donated.error.message).toContain(sent.hash);
    expect(donated.error.hint).toContain('--id');
    const human = await payer.user.run(['donate', '0.1', '--yes', '--id', 'order-7']);
    expect(human.code).toBe(10);
    expect(human.stdout + human.stderr).not.toMatch(/Already donated|Thank you/);
    expect(await blocks()).toBe(before);
    // The send itself is still protected by its key.
    expect(await payer.user.json(['send', payee, '0.1', '--yes', '--id', 'order-7'])).toMatchObject({ _code: 0, hash: sent.hash, repeated: true });
  });

  it('a key of a donation, given to send or pay, is refused naming the donation, even to the donation address', async () => {
    const donated = await payer.user.json<{ hash: string; to: string }>(['donate', '0.2', '--yes', '--id', 'gift-7']);
    expect(donated._code).toBe(0);
    const before = await blocks();
    for (const args of [
      ['send', donated.to, '0.2', '--yes', '--id', 'gift-7'],
      ['pay', `nano:${donated.to}?amount=200000000000000000000000000000`, '--yes', '--id', 'gift-7'],
    ]) {
      const refused = await payer.user.json<Refusal>(args);
      expect(refused._code, args[0]).toBe(10);
      expect(refused.error.message).toContain('a donation of 0.2 XNO');
      expect(refused.error.message).toContain(donated.hash);
    }
    expect(await blocks()).toBe(before);
    expect(await payer.user.json(['donate', '0.2', '--yes', '--id', 'gift-7'])).toMatchObject({ _code: 0, hash: donated.hash, repeated: true });
  });

  it('a key recorded before kinds were (an earlier version) still protects its payment, and is not taken for a donation', async () => {
    const sent = await payer.user.json<{ hash: string }>(['send', payee, '0.3', '--yes', '--id', 'old-key']);
    expect(sent._code).toBe(0);
    // As an earlier version wrote it: the same record, without its kind.
    const log = new SendLog(stateDir(payer.user.configDir, 'sends'));
    const record = (await log.result('default', 'old-key')) as SendRecord & { kind?: string };
    expect(record).toMatchObject({ hash: sent.hash });
    const { kind: _, ...old } = record;
    await log.saveResult('default', 'old-key', old);
    const before = await blocks();
    expect(await payer.user.json(['send', payee, '0.3', '--yes', '--id', 'old-key'])).toMatchObject({ _code: 0, hash: sent.hash, repeated: true });
    expect(await payer.user.json(['send', payee, '0.4', '--yes', '--id', 'old-key'])).toMatchObject({ _code: 10, error: { code: 'IDEMPOTENCY_MISMATCH' } });
    const donated = await payer.user.json<Refusal>(['donate', '0.3', '--yes', '--id', 'old-key']);
    expect(donated._code).toBe(10);
    expect(donated.error.message).toContain(payee);
    expect(await blocks()).toBe(before);
  });
});

describe('--id of an x402 payment (nanopay fetch)', () => {
  it('is refused to a send, and a key of a send is refused to fetch; nothing is paid', async () => {
    const { merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {});
    // The API sold: the sandbox's own ledger dump (any GET that answers 200).
    const paywall = await startCommand<{ url: string }>(['paywall', '--upstream', sb.url, '--price', '0.001', '--to', merchantAddress, '--json'], merchant.env);
    try {
      const url = `${paywall.printed.url}/sandbox/ledger`;
      const paid = await customer.json<{ status: number; payment: { hash: string } }>(['fetch', url, '--max', '0.01', '--yes', '--id', 'api-1']);
      expect(paid, JSON.stringify(paid)).toMatchObject({ _code: 0, status: 200 });
      const before = await blocks();
      const sent = await customer.json<Refusal>(['send', merchantAddress, '0.001', '--yes', '--id', 'api-1']);
      expect(sent).toMatchObject({ _code: 10, error: { code: 'IDEMPOTENCY_MISMATCH' } });
      expect(sent.error.message).toContain('an x402 payment');
      expect(await customer.json<{ hash: string }>(['send', merchantAddress, '0.001', '--yes', '--id', 'api-2'])).toMatchObject({ _code: 0 });
      const mid = await blocks();
      const fetched = await customer.json<Refusal>(['fetch', url, '--max', '0.01', '--yes', '--id', 'api-2']);
      expect(fetched).toMatchObject({ _code: 10, error: { code: 'IDEMPOTENCY_MISMATCH' } });
      expect(fetched.error.message).toContain('a send of 0.001 XNO');
      expect(await blocks()).toBe(mid);
      expect(mid).toBe(before + 1);
    } finally {
      await paywall.stop();
    }
  });
});
