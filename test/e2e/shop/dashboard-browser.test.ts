import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../../src/nano/index.js';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { browserAvailability, launchChromium } from '../../helpers/network/browser.js';
import { until } from '../../helpers/network/webhook-receiver.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';

/**
 * The operator dashboard of checkout serve in Chromium (issue 44): sign-in, the orders list with live updates, an
 * order refunded from its page and sent by the server's signer, a refund claim link made and claimed, roles (a read
 * operator cannot refund; API keys by role are tested in api-keys.test.ts),
 * CSRF and XSS attempts refused, axe-core on every main page at 1280 and 360 px, a screenshot of each kept.
 */
const ARTIFACTS = fileURLToPath(new URL('../../artifacts', import.meta.url));
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const browser = browserAvailability();
if (!browser.available && !browser.inCi) process.stderr.write(`\nBROWSER TESTS SKIPPED (test/e2e/shop/dashboard-browser.test.ts): ${browser.reason}\n\n`);

it.runIf(!browser.available && browser.inCi)('Chromium is installed: CI runs the browser tests', () => {
  expect.fail(`${browser.reason}; .ci/run installs it`);
});

const ADMIN_PASSWORD = 'correct horse battery staple';
const READER_PASSWORD = 'reader reads only, 2026';
const XSS_ORDER = '"><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';

describe.skipIf(!browser.available)('the operator dashboard in Chromium', () => {
  let sb: RunningSandbox;
  let merchant: BackendUser;
  let payer: BackendUser;
  let server: RunningCommand<{ url: string; token_file: string }>;
  let url: string;
  let token: string;
  let chromium: Browser;
  let admin: Page;
  /** Where a customer who paid from an exchange wants the refund: an address of their own. */
  let merchantCustomer: string;

  const api = async (path: string, init: RequestInit = {}, bearer = token): Promise<{ status: number; body: Record<string, any> }> => {
    const r = await fetch(`${url}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}`, ...(init.headers as Record<string, string>) } });
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };
  const made = async (amount: string, extra: Record<string, unknown> = {}): Promise<Record<string, any>> =>
    (await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount, ...extra }) })).body.data;

  /** Signs in over HTTP (as a script would): the session cookie and the CSRF token of its forms. */
  const signIn = async (name: string, password: string): Promise<{ cookie: string; csrf: string }> => {
    const answer = await fetch(`${url}/dashboard/sign-in`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ name, password }) });
    expect(answer.status).toBe(303);
    const cookie = (answer.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const html = await (await fetch(`${url}/dashboard/orders`, { headers: { cookie } })).text();
    return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(html)?.[1] as string };
  };

  async function axe(page: Page): Promise<{ id: string; nodes: number }[]> {
    await page.addScriptTag({ content: AXE_SOURCE }).catch(() => page.evaluate(AXE_SOURCE));
    const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as { violations: { id: string; nodes: unknown[] }[] };
    return result.violations.map((v) => ({ id: v.id, nodes: v.nodes.length }));
  }

  /** axe-core finds nothing at a desktop's and a phone's width; a screenshot of each is kept. */
  async function checkPage(page: Page, name: string): Promise<void> {
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 });
      expect(await axe(page), `${name} at ${width}px`).toEqual([]);
      await page.screenshot({ path: `${ARTIFACTS}/dashboard-${name}-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  beforeAll(async () => {
    sb = await sandbox();
    let own: BackendUser;
    [merchant, payer, own] = await Promise.all([backendUser(sb, 'node'), fundedUser(sb, 'node', '5'), backendUser(sb, 'node')]);
    merchantCustomer = own.address;
    const env = merchant.user.env;
    for (const [name, role, password] of [
      ['alice', 'admin', ADMIN_PASSWORD],
      ['reader', 'read', READER_PASSWORD],
    ] as const) {
      const added = await merchant.user.run(['checkout', 'operators', 'add', name, '--role', role, '--password-stdin'], { env, input: `${password}\n` });
      expect(added.code, added.stderr).toBe(0);
    }
    server = await startCommand(['checkout', 'serve', '--json', '--refunds', '--poll-interval', '1', '--shop-name', 'Test <Shop>'], env);
    url = server.printed.url;
    token = readFileSync(server.printed.token_file, 'utf8').trim();
    chromium = await launchChromium();
    admin = await (await chromium.newContext()).newPage();
    await mkdir(ARTIFACTS, { recursive: true });
  });

  afterAll(async () => {
    await chromium?.close();
    await server?.stop();
    await sb?.close();
    await shutdownWorkers();
  });

  it('asks for sign-in, refuses a wrong password, and signs an operator in with a session cookie (HttpOnly, SameSite=Strict)', async () => {
    const page = await admin.goto(`${url}/dashboard/orders`);
    expect(admin.url()).toBe(`${url}/dashboard/sign-in`);
    expect(page?.headers()['content-security-policy']).toContain("script-src 'self'");
    await checkPage(admin, 'sign-in');
    await admin.getByLabel('Operator name').fill('alice');
    await admin.getByLabel('Password').fill('not the password');
    await admin.getByRole('button', { name: 'Sign in' }).click();
    await expect(admin.getByRole('alert').textContent()).resolves.toContain('Wrong name or password');
    await admin.getByLabel('Password').fill(ADMIN_PASSWORD);
    await admin.getByRole('button', { name: 'Sign in' }).click();
    await admin.waitForURL(`${url}/dashboard/orders`);
    const [cookie] = await admin.context().cookies();
    expect(cookie).toMatchObject({ name: 'nanopay_session', httpOnly: true, sameSite: 'Strict', path: '/dashboard' });
    expect(await admin.getByRole('heading', { name: 'Orders' }).isVisible()).toBe(true);
  });

  it('shows new orders and payments live, with what customers wrote kept inert', async () => {
    await admin.goto(`${url}/dashboard/orders`);
    await admin.locator('#live-status').waitFor({ state: 'visible' });
    const request = await made('0.4', { order_id: XSS_ORDER, metadata: { note: '<script>window.__pwned=3</script>' } });
    // No reload: the row arrives by the live update.
    const row = admin.getByRole('row').filter({ hasText: XSS_ORDER });
    await row.waitFor({ timeout: 10_000 });
    expect(await row.getByText('waiting').isVisible()).toBe(true);
    await payUri(payer.session, request.uri as string, {});
    await row.getByText('paid').waitFor({ timeout: 15_000 });
    expect(await admin.evaluate('window.__pwned')).toBeUndefined();
    await expect(admin.locator('.totals').textContent()).resolves.toMatch(/Received0\.4\d* XNO/);
    await checkPage(admin, 'orders');
    // The order page shows the payment, and the script in its metadata as text.
    await row.getByRole('link').click();
    await admin.getByRole('heading', { name: /Order/ }).waitFor();
    expect(await admin.getByText(payer.address).first().isVisible()).toBe(true);
    expect(await admin.locator('pre').textContent()).toContain('<script>window.__pwned=3</script>');
    expect(await admin.evaluate('window.__pwned')).toBeUndefined();
    await checkPage(admin, 'order');
  });

  it('refunds part of an order from its page after showing the amount and destination, and the server sends it', async () => {
    const request = await made('0.5', { order_id: 'refund-me' });
    await payUri(payer.session, request.uri as string, {});
    await until(async () => (await api(`/api/v1/requests/${request.id as string}`)).body.data.status === 'paid', 'paid');
    await admin.goto(`${url}/dashboard/orders/${request.id as string}`);
    await admin.getByLabel(/Refund amount in XNO/).fill('0.2');
    await admin.getByRole('button', { name: 'Review the refund' }).click();
    await admin.getByRole('heading', { name: 'Confirm the refund' }).waitFor();
    expect(await admin.getByText(payer.address).isVisible()).toBe(true);
    await checkPage(admin, 'refund-confirm');
    await admin.getByRole('button', { name: 'Refund 0.2 XNO' }).click();
    await expect(admin.getByRole('status').first().textContent()).resolves.toMatch(/Refund .* of 0\.2 XNO to nano_.* is recorded/);
    // A double submit of the confirmed form records no second refund (its idempotency key).
    await until(async () => (await api(`/api/v1/requests/${request.id as string}`)).body.data.status === 'partially_refunded', 'refunded by the server');
    const refunds = (await api(`/api/v1/requests/${request.id as string}/refunds`)).body.data.data as Record<string, any>[];
    expect(refunds).toMatchObject([{ status: 'sent', amount_raw: xnoToRaw('0.2').toString(), to: payer.address }]);
    await admin.reload();
    expect(await admin.getByText(refunds[0]?.block as string).isVisible()).toBe(true);
  });

  it('sends a refund claim link from the dashboard, which the customer opens and claims with their own address', async () => {
    const request = await made('0.3', { order_id: 'claim-me' });
    await payUri(payer.session, request.uri as string, {});
    await until(async () => (await api(`/api/v1/requests/${request.id as string}`)).body.data.status === 'paid', 'paid');
    await admin.goto(`${url}/dashboard/orders/${request.id as string}`);
    await admin.getByLabel(/Claim amount in XNO/).fill('0.25');
    await admin.getByRole('button', { name: 'Make the link' }).click();
    const notice = (await admin.getByRole('status').first().textContent()) as string;
    const link = /(http\S+\/claim\/[A-Za-z0-9_-]{43})/.exec(notice)?.[1] as string;
    expect(link).toBeDefined();
    const customerPage = await (await chromium.newContext()).newPage();
    await customerPage.goto(link);
    expect(await customerPage.getByRole('heading', { name: 'Claim your refund' }).isVisible()).toBe(true);
    await checkPage(customerPage, 'claim');
    await customerPage.getByLabel('Your Nano address').fill(merchantCustomer);
    await customerPage.getByRole('button', { name: 'Continue' }).click();
    await customerPage.getByRole('heading', { name: 'Check your address' }).waitFor({ timeout: 5000 }).catch(async (e) => {
      throw new Error(`${e}\n${await customerPage.content()}`);
    });
    await customerPage.getByRole('button', { name: 'Send the refund to this address' }).click();
    await customerPage.getByRole('heading', { name: 'Your refund' }).waitFor();
    await until(async () => (await api(`/api/v1/requests/${request.id as string}`)).body.data.refunded_amount === '0.25', 'the claimed refund sent');
    await customerPage.reload();
    expect(await customerPage.getByText('Sent. Block').isVisible()).toBe(true);
    await customerPage.context().close();
    await admin.reload();
    expect(await admin.getByRole('region', { name: /Refund claims/ }).getByRole('cell', { name: 'claimed', exact: true }).isVisible()).toBe(true);
  });

  it('a read operator sees orders but no refund form, and is refused if it posts one anyway', async () => {
    const request = await made('0.1');
    const reader = await (await chromium.newContext()).newPage();
    await reader.goto(`${url}/dashboard/sign-in`);
    await reader.getByLabel('Operator name').fill('reader');
    await reader.getByLabel('Password').fill(READER_PASSWORD);
    await reader.getByRole('button', { name: 'Sign in' }).click();
    await reader.waitForURL(`${url}/dashboard/orders`);
    await reader.goto(`${url}/dashboard/orders/${request.id as string}`);
    expect(await reader.getByRole('button', { name: 'Review the refund' }).count()).toBe(0);
    expect(await reader.getByText('refunds need the refund or admin role').isVisible()).toBe(true);
    await reader.context().close();
    const session = await signIn('reader', READER_PASSWORD);
    const posted = await fetch(`${url}/dashboard/orders/${request.id as string}/refund`, {
      method: 'POST',
      headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: session.csrf, amount: '0.1', confirm: 'yes' }),
    });
    expect(posted.status).toBe(403);
    expect(await posted.text()).toContain('needs the refund role');
    expect((await api(`/api/v1/requests/${request.id as string}/refunds`)).body.data.data).toEqual([]);
  });

  it('refuses forms without the CSRF token, from another origin, and a page of another site posting into it', async () => {
    const request = await made('0.3');
    await payUri(payer.session, request.uri as string, {});
    await until(async () => (await api(`/api/v1/requests/${request.id as string}`)).body.data.status === 'paid', 'paid');
    const session = await signIn('alice', ADMIN_PASSWORD);
    const post = (headers: Record<string, string>, fields: Record<string, string>): Promise<Response> =>
      fetch(`${url}/dashboard/orders/${request.id as string}/refund`, { method: 'POST', headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields) });
    expect((await post({}, { amount: '0.1', confirm: 'yes' })).status).toBe(403);
    expect((await post({}, { csrf: 'forged', amount: '0.1', confirm: 'yes' })).status).toBe(403);
    expect((await post({ origin: 'http://evil.example' }, { csrf: session.csrf, amount: '0.1', confirm: 'yes' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'cross-site' }, { csrf: session.csrf, amount: '0.1', confirm: 'yes' })).status).toBe(403);
    // Another site's page, in the browser the operator is signed in with, posts a refund form at the dashboard.
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<form id="f" method="post" action="${url}/dashboard/orders/${request.id as string}/refund"><input name="amount" value="0.3"><input name="confirm" value="yes"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const page = await admin.context().newPage();
      await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      await page.waitForLoadState('networkidle');
      await page.close();
    } finally {
      evil.close();
    }
    expect((await api(`/api/v1/requests/${request.id as string}/refunds`)).body.data.data).toEqual([]);
  });

  it('exports the day from the dashboard, lists sweeps and health, and signs out', async () => {
    const today = new Date().toISOString().slice(0, 10);
    await admin.goto(`${url}/dashboard/export`);
    await checkPage(admin, 'export');
    await admin.getByLabel('From (UTC, included)').fill(today);
    await admin.getByLabel('To (UTC, included)').fill(today);
    const [download] = await Promise.all([admin.waitForEvent('download'), admin.getByRole('button', { name: 'Download' }).click()]);
    const csv = readFileSync((await download.path()) as string, 'utf8');
    expect(csv).toContain('refund-me');
    expect(download.suggestedFilename()).toBe(`orders-${today}-${today}.csv`);
    await admin.goto(`${url}/dashboard/sweeps`);
    expect(await admin.getByRole('heading', { name: 'Sweeps' }).isVisible()).toBe(true);
    await admin.goto(`${url}/dashboard/health`);
    expect(await admin.getByRole('heading', { name: 'Health' }).isVisible()).toBe(true);
    await admin.getByRole('button', { name: 'Sign out' }).click();
    await admin.waitForURL(`${url}/dashboard/sign-in`);
    await admin.goto(`${url}/dashboard/orders`);
    expect(admin.url()).toBe(`${url}/dashboard/sign-in`);
  });
});
