import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { openCheckout } from '../../../src/ops/requests/checkout.js';
import { requestPayment } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { startCheckout } from '../../helpers/network/browser.js';
import { userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';

// `nanopay checkout` on the service backend as a child process; the requests it serves are made in-process
// (request has its own tests), and so are the refusals its front end adds nothing to.
let sb: RunningSandbox;
let merchant: CliUser;
let merchantAddress: string;
const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

beforeAll(async () => {
  sb = await sandbox();
  ({ user: merchant, address: merchantAddress } = await userWithWallet(sb.url));
});

afterAll(async () => {
  await sb?.close();
});

/** What the operation refuses with. */
async function refusal(promise: Promise<unknown>): Promise<NanoPayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NanoPayError);
  return error as NanoPayError;
}

describe('nanopay checkout', () => {
  it('serves the page of an existing request, with the amount and address the service reports', async () => {
    const request = await requestPayment(userSession(merchant), { amount: { xno: '2' } });
    const checkout = await startCheckout(merchant, [request.transaction_id]);
    try {
      expect(checkout).toMatchObject({ transaction_id: request.transaction_id, amount: request.amount, receive_address: merchantAddress });
      const page = await fetch(checkout.url);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain(`>${request.amount}<`);
      expect(html).toContain(`>${merchantAddress}<`);
    } finally {
      await checkout.stop();
    }
  });

  it('refuses a request paid to another address than --to: exit 10 and the error document', async () => {
    const request = await requestPayment(userSession(merchant), { amount: { xno: '1' } });
    const conflict = await merchant.json<{ error: { code: string } }>(['checkout', request.transaction_id, '--to', other]);
    expect(conflict).toMatchObject({ _code: 10, error: { code: 'CONFLICT' } });
  });

  it('a service that makes the new request for another address: request and checkout --amount show nothing (exit 5)', async () => {
    const proxy = await startFaultyProxy(sb.url, (method, path) => (method === 'POST' && path === '/payment/request' ? { rewrite: (d) => ({ ...d, receive_address: other }) } : 'pass'));
    try {
      const env = { NANOPAY_API_URL: proxy.url };
      for (const args of [['request', '1'], ['checkout', '--amount', '1']]) {
        const result = await merchant.run([...args, '--json'], { env });
        expect(result.code).toBe(5);
        expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'SERVICE_INCONSISTENT' } });
        // The error names the address it was given, as a diagnosis; nothing offers it to pay.
        expect(result.stdout + result.stderr).not.toMatch(/nano:nano_|https?:\/\/127/);
      }
      expect(proxy.seen.filter((r) => r === 'POST /payment/request')).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });

  it('in process: needs a TRANSACTION_ID or --amount, and an http(s) --redirect-url', async () => {
    const session = userSession(merchant);
    expect((await refusal(openCheckout(session, {}))).code).toBe('USAGE');
    expect((await refusal(openCheckout(session, { amount: '1', redirectUrl: 'javascript:alert(1)' }))).code).toBe('INVALID_REQUEST');
  });
});
