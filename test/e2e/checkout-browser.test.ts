import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../src/nano/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { browserAvailability, launchChromium, readQr, startCheckout, startShop, type CheckoutProcess } from '../helpers/browser.js';
import { userWithWallet, type CliUser } from '../helpers/cli.js';
import { sandbox } from '../helpers/sandbox.js';

const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const browser = browserAvailability();
if (!browser.available && !browser.inCi) {
  // Said out loud, never a silent pass: the summary also lists these tests as skipped.
  process.stderr.write(`\nBROWSER TESTS SKIPPED (test/e2e/checkout-browser.test.ts): ${browser.reason}\n\n`);
}

it.runIf(!browser.available && browser.inCi)('Chromium is installed: CI runs the browser tests', () => {
  expect.fail(`${browser.reason}; .ci/run installs it`);
});

describe.skipIf(!browser.available)('the checkout page in Chromium', () => {
  let sb: RunningSandbox;
  const sandboxLog: string[] = [];
  let merchant: CliUser;
  let merchantAddress: string;
  let customer: CliUser;
  let shop: Awaited<ReturnType<typeof startShop>>;
  let chromium: Browser;
  let checkout: CheckoutProcess;
  const apiKeys = (): string[] => Object.keys(sb.service.snapshot().apiKeys);

  beforeAll(async () => {
    sb = await sandbox({ log: (line) => sandboxLog.push(line) });
    [{ user: merchant, address: merchantAddress }, { user: customer }, shop, chromium] = await Promise.all([
      userWithWallet(sb.url),
      userWithWallet(sb.url, '20'),
      startShop(),
      launchChromium(),
    ]);
    checkout = await startCheckout(merchant, ['--amount', '1.5', '--redirect-url', `${shop.url}/thanks`]);
    await mkdir(ARTIFACTS, { recursive: true });
  });

  afterAll(async () => {
    await checkout?.stop();
    await chromium?.close();
    shop?.server.close();
    await sb?.close();
  });

  /** A page that records console errors, uncaught exceptions and every URL it asks for. */
  async function open(url: string, options: BrowserContextOptions = {}): Promise<{ page: Page; errors: string[]; requests: string[]; close(): Promise<void> }> {
    const context = await chromium.newContext(options);
    const page = await context.newPage();
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    page.on('pageerror', (e) => void errors.push(e.message));
    page.on('request', (r) => void requests.push(r.url()));
    await page.goto(url);
    return { page, errors, requests, close: () => context.close() };
  }

  const uriOf = (c: { receive_address: string; amount: string }): string => `nano:${c.receive_address}?amount=${xnoToRaw(c.amount)}`;

  it('nanopay checkout --json prints the page URL and the request', () => {
    expect(checkout.url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/checkout/${checkout.transaction_id}$`));
    expect(checkout.receive_address).toBe(merchantAddress);
    expect(xnoToRaw(checkout.amount) > xnoToRaw('1.5')).toBe(true);
  });

  for (const [width, height, scheme] of [[360, 640, 'light'], [360, 640, 'dark'], [1280, 800, 'light'], [1280, 800, 'dark']] as const) {
    it(`at ${width}x${height} (${scheme}): no console error, nothing leaves 127.0.0.1, the QR code is the nano: URI with the raw amount`, async () => {
      const { page, errors, requests, close } = await open(checkout.url, { viewport: { width, height }, colorScheme: scheme });
      await expect.poll(() => page.locator('button[data-copy="amount"]').isVisible()).toBe(true);
      expect(await page.textContent('#amount')).toBe(checkout.amount);
      expect(await page.textContent('#address')).toBe(checkout.receive_address);
      expect(await page.getAttribute('a.wallet', 'href')).toBe(uriOf(checkout));
      const shot = await page.screenshot({ path: `${ARTIFACTS}checkout-${width}-${scheme}.png` });
      expect(readQr(shot)).toBe(uriOf(checkout));
      // The page fits the screen: nothing scrolls sideways.
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width);
      const html = await page.content();
      for (const key of apiKeys()) expect(html).not.toContain(key);
      await close();
      expect(errors).toEqual([]);
      expect(requests.length).toBeGreaterThan(0);
      for (const url of requests) expect(new URL(url).hostname).toBe('127.0.0.1');
    });
  }

  it('is keyboard-usable: Tab reaches the wallet link and the copy buttons, Enter copies', async () => {
    const { page, close } = await open(checkout.url, { permissions: ['clipboard-read', 'clipboard-write'] });
    await expect.poll(() => page.locator('button[data-copy="amount"]').isVisible()).toBe(true);
    const focused: string[] = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      focused.push(await page.evaluate<string>("document.activeElement.getAttribute('aria-label') ?? document.activeElement.textContent"));
    }
    expect(focused).toEqual(['Open in wallet', 'Copy the amount', 'Copy the address']);
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(checkout.amount);
    expect(await page.textContent('#announce')).toBe('Amount copied');
    await close();
  });

  it('turns paid within two seconds of the payment, without a reload, then lands on redirect_url', async () => {
    const { page, errors, requests, close } = await open(checkout.url);
    // A reload would start a new document without this mark.
    await page.evaluate('window.sameDocument = true');
    const paid = await customer.json<{ hash: string }>(['pay', uriOf(checkout), '--yes']);
    expect(paid._code).toBe(0);
    await page.waitForSelector('body[data-state="paid"]', { timeout: 2_000 });
    expect(await page.evaluate<boolean | undefined>('window.sameDocument')).toBe(true);
    expect(await page.textContent('#status')).toBe('Paid. Thank you!');
    expect(await page.textContent('#block-hash')).toBe(paid.hash);
    expect(await page.locator('.qr').isVisible()).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}checkout-paid-1280.png` });
    await page.waitForURL(`${shop.url}/thanks`, { timeout: 15_000 });
    expect(await page.textContent('h1')).toBe('Thank you for your order');
    await close();
    expect(errors).toEqual([]);
    for (const url of requests) expect(new URL(url).hostname).toBe('127.0.0.1');
  });

  it('reaches the paid state with JavaScript disabled (the page reloads itself), then the redirect', async () => {
    const second = await startCheckout(merchant, ['--amount', '0.75', '--redirect-url', `${shop.url}/thanks`]);
    try {
      const { page, close } = await open(second.url, { javaScriptEnabled: false });
      expect(await page.getAttribute('body', 'data-state')).toBe('waiting');
      expect(await page.locator('button[data-copy="amount"]').isVisible()).toBe(false);
      expect((await customer.json(['pay', uriOf(second), '--yes']))._code).toBe(0);
      await page.waitForSelector('body[data-state="paid"]', { timeout: 15_000 });
      expect(await page.textContent('#block-hash')).toMatch(/^[0-9A-F]{64}$/);
      await page.waitForURL(`${shop.url}/thanks`, { timeout: 15_000 });
      await close();
    } finally {
      await second.stop();
    }
  });

  it('answers an unknown or malformed id with a clear 404 page', async () => {
    const base = new URL(checkout.url).origin;
    const context = await chromium.newContext();
    const page = await context.newPage();
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id', '%3Cscript%3E']) {
      const response = await page.goto(`${base}/checkout/${id}`);
      expect(response?.status()).toBe(404);
      expect(await page.textContent('h1')).toBe('Payment not found');
    }
    await context.close();
  });

  it('never logs the API key, one line per request', () => {
    const log = checkout.stderr();
    expect(log).toMatch(/GET \/checkout\/[0-9a-f-]{36} 200/);
    expect(log).toMatch(/GET \/checkout\/[0-9a-f-]{36}\/events 200/);
    for (const key of apiKeys()) expect(log).not.toContain(key);
  });

  it("the sandbox serves the service's planned link /payment/create/<address>/<API_KEY>: creates the request, redirects to its page", async () => {
    const shopWallet = (await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { address: string; api_key: string } };
    const { address, api_key: key } = shopWallet.data;
    const link = `${sb.url}/payment/create/${address}/${key}?amount=0.25&redirect_url=${encodeURIComponent(`${shop.url}/thanks`)}`;
    const { page, errors, close } = await open(link, { viewport: { width: 360, height: 640 } });
    expect(page.url()).toMatch(new RegExp(`^${sb.url}/checkout/[0-9a-f-]{36}$`));
    const amount = (await page.textContent('#amount')) as string;
    expect(amount).toMatch(/^0\.25\d*$/);
    const uri = `nano:${address}?amount=${xnoToRaw(amount)}`;
    expect(readQr(await page.screenshot())).toBe(uri);
    expect(await page.content()).not.toContain(key);
    expect((await customer.json(['pay', uri, '--yes']))._code).toBe(0);
    await page.waitForSelector('body[data-state="paid"]', { timeout: 2_000 });
    await page.waitForURL(`${shop.url}/thanks`, { timeout: 15_000 });
    await close();
    expect(errors).toEqual([]);
    expect(sandboxLog.join('\n')).toContain(`GET /payment/create/${address}/*** 303`);
    expect(sandboxLog.join('\n')).not.toContain(key);

    const refused = await open(`${sb.url}/payment/create/${address}/not-a-key?amount=1`);
    expect(await refused.page.textContent('h1')).toBe('This payment link does not work');
    expect(await refused.page.textContent('p')).toMatch(/API key is not valid/);
    await refused.close();
    const noAmount = await fetch(`${sb.url}/payment/create/${address}/${key}`, { redirect: 'manual' });
    expect(noAmount.status).toBe(400);
    expect(await noAmount.text()).toContain('?amount=1.5');
  });
});
