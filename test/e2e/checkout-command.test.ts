import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { startCheckout } from '../helpers/browser.js';
import { userWithWallet, type CliUser } from '../helpers/cli.js';
import { sandbox } from '../helpers/sandbox.js';

let sb: RunningSandbox;
let merchant: CliUser;
let merchantAddress: string;

beforeAll(async () => {
  sb = await sandbox();
  ({ user: merchant, address: merchantAddress } = await userWithWallet(sb.url));
});

afterAll(async () => {
  await sb?.close();
});

describe('nanopay checkout', () => {
  it('serves the page of an existing request, with the amount and address the service reports', async () => {
    const request = await merchant.json<{ transaction_id: string; amount: string }>(['request', '2']);
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

  it('refuses a request paid to another address than --to, and needs a TRANSACTION_ID or --amount', async () => {
    const request = await merchant.json<{ transaction_id: string }>(['request', '1']);
    const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
    const conflict = await merchant.json<{ error: { code: string } }>(['checkout', request.transaction_id, '--to', other]);
    expect(conflict.error.code).toBe('CONFLICT');
    const neither = await merchant.json<{ error: { code: string } }>(['checkout']);
    expect(neither.error.code).toBe('USAGE');
    const badRedirect = await merchant.json<{ error: { code: string } }>(['checkout', '--amount', '1', '--redirect-url', 'javascript:alert(1)']);
    expect(badRedirect.error.code).toBe('INVALID_REQUEST');
  });
});
