import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, BrowserContextOptions, ConsoleMessage, Page, Request, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw, type Account } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { browserAvailability, launchChromium, readQr, startCheckout, startShop, type CheckoutProcess } from '../../helpers/network/browser.js';
import { SandboxClient, newAccount } from '../../helpers/ledger/chain.js';
import { backendUser, userSession } from '../../helpers/ledger/backend-users.js';
import { requestPayment } from '../../../src/ops/requests/payments.js';
import { userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand } from '../../helpers/processes/serve.js';

const ARTIFACTS = fileURLToPath(new URL('../../artifacts', import.meta.url));
const browser = browserAvailability();
if (!browser.available && !browser.inCi) {
  // Said out loud, never a silent pass: the summary also lists these tests as skipped.
  process.stderr.write(`\nBROWSER TESTS SKIPPED (test/e2e/shop/checkout-browser.test.ts): ${browser.reason}\n\n`);
}

it.runIf(!browser.available && browser.inCi)('Chromium is installed: CI runs the browser tests', () => {
  expect.fail(`${browser.reason}; .ci/run installs it`);
});

describe.skipIf(!browser.available)('the checkout page in Chromium', () => {
  let sb: RunningSandbox;
  const sandboxLog: string[] = [];
  let merchant: CliUser;
  let merchantAddress: string;
  // The customer pays from here, with the real protocol core against the sandbox: the page, not the paying wallet, is the subject.
  const customer: Account = newAccount();
  let wallet: SandboxClient;
  let shop: Awaited<ReturnType<typeof startShop>>;
  let chromium: Browser;
  // One tab serves every test that needs no context of its own: a new tab costs Chromium a renderer process.
  let tab: Page;
  let checkout: CheckoutProcess;
  let noScript: CheckoutProcess;
  const apiKeys = (): string[] => Object.keys(sb.service.snapshot().apiKeys);

  beforeAll(async () => {
    [sb, shop] = await Promise.all([sandbox({ log: (line) => sandboxLog.push(line) }), startShop()]);
    const merchantReady = async (): Promise<void> => {
      ({ user: merchant, address: merchantAddress } = await userWithWallet(sb.url));
      // Short waits where the wait is not the subject (the sandbox's page counts down the default five seconds).
      [checkout, noScript] = await Promise.all([
        startCheckout(merchant, ['--amount', '1.5', '--redirect-url', `${shop.url}/thanks`, '--redirect-delay', '2']),
        startCheckout(merchant, ['--amount', '0.75', '--redirect-url', `${shop.url}/thanks`, '--redirect-delay', '2', '--reload-interval', '1']),
      ]);
    };
    const customerReady = async (): Promise<void> => {
      wallet = await SandboxClient.withNewKey(sb.url);
      await wallet.fund(customer.address, '20');
      await wallet.receiveAll(customer);
    };
    const browserReady = async (): Promise<void> => {
      chromium = await launchChromium();
      tab = await (await chromium.newContext()).newPage();
    };
    await Promise.all([browserReady(), merchantReady(), customerReady(), mkdir(ARTIFACTS, { recursive: true })]);
  });

  afterAll(async () => {
    await Promise.all([checkout?.stop(), noScript?.stop()]);
    await chromium?.close();
    shop?.server.close();
    await sb?.close();
    await shutdownWorkers();
  });

  interface Opened {
    page: Page;
    response: Response | null;
    errors: string[];
    requests: string[];
    close(): Promise<void>;
  }

  /** Loads `url` in `page`, recording console errors, uncaught exceptions and every URL it asks for until close(). */
  async function load(page: Page, url: string, done: () => Promise<void> = async () => {}): Promise<Opened> {
    const errors: string[] = [];
    const requests: string[] = [];
    const onConsole = (m: ConsoleMessage): void => void (m.type() === 'error' && errors.push(m.text()));
    const onPageError = (e: Error): void => void errors.push(e.message);
    const onRequest = (r: Request): void => void requests.push(r.url());
    page.on('console', onConsole);
    page.on('pageerror', onPageError);
    page.on('request', onRequest);
    const response = await page.goto(url);
    const close = async (): Promise<void> => {
      page.off('console', onConsole);
      page.off('pageerror', onPageError);
      page.off('request', onRequest);
      await done();
    };
    return { page, response, errors, requests, close };
  }

  /**
   * The shared tab, emptied and set up afresh (Playwright's defaults for a new context unless told otherwise), then
   * loaded with `url`.
   */
  async function open(
    url: string,
    options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark'; permissions?: string[] } = {},
  ): Promise<Opened> {
    // The last test's page ends first: its live updates, cut by a server that test stopped, log nothing into this one.
    await tab.goto('about:blank');
    await tab.setViewportSize(options.viewport ?? { width: 1280, height: 720 });
    await tab.emulateMedia({ colorScheme: options.colorScheme ?? 'light' });
    await tab.context().clearPermissions();
    if (options.permissions !== undefined) await tab.context().grantPermissions(options.permissions);
    return load(tab, url);
  }

  /** A tab in a context of its own, for what cannot be undone in the shared one; `prepare` runs before the load. */
  async function openAlone(url: string, options: BrowserContextOptions, prepare?: (context: BrowserContext) => Promise<void>): Promise<Opened> {
    const context = await chromium.newContext(options);
    await prepare?.(context);
    return load(await context.newPage(), url, () => context.close());
  }

  const uriOf = (c: { receive_address: string; amount: string }): string => `nano:${c.receive_address}?amount=${xnoToRaw(c.amount)}`;
  /** Pays exactly what the request asks; returns the send's hash. */
  const pay = (c: { receive_address: string; amount: string }): Promise<string> => wallet.send(customer, c.receive_address, xnoToRaw(c.amount));

  it('nanopay checkout --json prints the page URL and the request', () => {
    expect(checkout.url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/checkout/${checkout.transaction_id}$`));
    expect(checkout.receive_address).toBe(merchantAddress);
    expect(xnoToRaw(checkout.amount) > xnoToRaw('1.5')).toBe(true);
  });

  it('refuses a redirect delay or a reload interval under one second', async () => {
    await Promise.all(
      ['--redirect-delay', '--reload-interval'].map(async (flag) => {
        const refused = await merchant.json<{ error: { code: string; message: string } }>(['checkout', '--amount', '1', flag, '0']);
        expect(refused._code).toBe(2);
        expect(refused.error.code).toBe('USAGE');
        expect(refused.error.message).toContain(flag);
      }),
    );
  });

  for (const [width, height, scheme] of [[360, 640, 'light'], [360, 640, 'dark'], [1280, 800, 'light'], [1280, 800, 'dark']] as const) {
    it(`at ${width}x${height} (${scheme}): no console error, nothing leaves 127.0.0.1, the QR code is the nano: URI with the raw amount`, async () => {
      const { page, errors, requests, close } = await open(checkout.url, { viewport: { width, height }, colorScheme: scheme });
      await expect.poll(() => page.locator('button[data-copy="amount"]').isVisible()).toBe(true);
      expect(await page.textContent('#amount')).toBe(checkout.amount);
      expect(await page.textContent('#address')).toBe(checkout.receive_address);
      expect(await page.getAttribute('a.wallet', 'href')).toBe(uriOf(checkout));
      // The sandbox's request, so test money: a band across the top says so, in view without scrolling.
      const band = page.locator('#test-mode');
      expect(await band.isVisible()).toBe(true);
      expect(await band.textContent()).toMatch(/^TEST MODE · nanopay sandbox: this is test money, not real XNO/);
      const bandBox = await band.boundingBox();
      expect(bandBox?.y).toBe(0);
      expect(bandBox?.width).toBeGreaterThanOrEqual(width - 20);
      const shot = await page.screenshot({ path: join(ARTIFACTS, `checkout-${width}-${scheme}.png`) });
      const qr = await page.locator('.qr').boundingBox();
      if (qr === null) expect.fail('the QR code is not shown');
      expect(readQr(shot, qr)).toBe(uriOf(checkout));
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
    const hash = await pay(checkout);
    await page.waitForSelector('body[data-state="paid"]', { timeout: 2_000 });
    expect(await page.evaluate<boolean | undefined>('window.sameDocument')).toBe(true);
    expect(await page.textContent('#status')).toBe('Paid. Thank you!');
    expect(await page.textContent('#block-hash')).toBe(hash);
    expect(await page.locator('.qr').isVisible()).toBe(false);
    expect(await page.getAttribute('#redirect', 'data-seconds')).toBe('2');
    await page.screenshot({ path: join(ARTIFACTS, `checkout-paid-1280.png`) });
    await page.waitForURL(`${shop.url}/thanks?transaction_id=${checkout.transaction_id}`, { timeout: 15_000 });
    expect(await page.textContent('h1')).toBe('Thank you for your order');
    await close();
    expect(errors).toEqual([]);
    for (const url of requests) expect(new URL(url).hostname).toBe('127.0.0.1');
  });

  it('reaches the paid state with JavaScript disabled (the page reloads itself), then the redirect', async () => {
    const { page, close } = await openAlone(noScript.url, { javaScriptEnabled: false });
    expect(await page.getAttribute('body', 'data-state')).toBe('waiting');
    expect(await page.content()).toContain('<meta http-equiv="refresh" content="1;url=?reload=auto">');
    expect(await page.locator('button[data-copy="amount"]').isVisible()).toBe(false);
    await pay(noScript);
    await page.waitForSelector('body[data-state="paid"]', { timeout: 15_000 });
    expect(await page.textContent('#block-hash')).toMatch(/^[0-9A-F]{64}$/);
    const thanks = `${shop.url}/thanks?transaction_id=${noScript.transaction_id}`;
    expect(await page.content()).toContain(`<meta http-equiv="refresh" content="2;url=${thanks}">`);
    await page.waitForURL(thanks, { timeout: 15_000 });
    await close();
  });

  it('says on the page, live, when its status can no longer be read and why (the shop ran out of credits)', async () => {
    const { user } = await userWithWallet(sb.url);
    const broke = await startCheckout(user, ['--amount', '0.5']);
    try {
      const { page, errors, close } = await open(broke.url);
      expect(await page.isHidden('#trouble')).toBe(true);
      sb.service.setCredits((await userSession(user).apiKey()) as string, 0);
      await page.waitForSelector('#trouble:not([hidden])', { timeout: 15_000 });
      expect(await page.textContent('#trouble')).toMatch(/cannot check your payment right now: the shop's account with the payment service has run out of credits/);
      expect(await page.textContent('#status')).toBe('Waiting for your payment…');
      await close();
      expect(errors).toEqual([]);
    } finally {
      await broke.stop();
    }
  });

  it('shows a node request expired, live, once its --expires-in has passed', async () => {
    const nodeMerchant = await backendUser(sb, 'node');
    // Long enough for the server to start and the page to load on a busy machine: the page must first show it waiting.
    const request = await requestPayment(nodeMerchant.session, { amount: { xno: '0.3' }, expiresInS: 8 });
    const served = await startCheckout(nodeMerchant.user, [request.transaction_id]);
    try {
      const { page, errors, close } = await open(served.url);
      expect(await page.getAttribute('body', 'data-state')).toBe('waiting');
      await page.waitForSelector('body[data-state="expired"]', { timeout: 15_000 });
      expect(await page.textContent('#status')).toBe('This payment request has expired');
      expect(await page.locator('.qr').isVisible()).toBe(false);
      await close();
      expect(errors).toEqual([]);
    } finally {
      await served.stop();
    }
  });

  it('a shop page says what an under- or overpayment did and what to do: the exact rest to the same address (which pays it), or contact the shop', async () => {
    const nodeMerchant = await backendUser(sb, 'node');
    // Fresh addresses: every payment to a request's account is its own, so the payments add up.
    const server = await startCommand<{ url: string; token_file: string }>(['checkout', 'serve', '--json', '--fresh-addresses', '--poll-interval', '1'], nodeMerchant.user.env);
    try {
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      const create = async (amount: string): Promise<{ checkout_url: string; receive_address: string }> => {
        const answer = await fetch(`${server.printed.url}/api/v1/requests`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount }) });
        return ((await answer.json()) as { data: { checkout_url: string; receive_address: string } }).data;
      };
      const [under, over] = [await create('0.4'), await create('0.2')];

      const { page, errors, close } = await open(under.checkout_url, { viewport: { width: 360, height: 640 } });
      await page.evaluate('window.sameDocument = true');
      await wallet.send(customer, under.receive_address, xnoToRaw('0.25'));
      await page.waitForSelector('body[data-state="underpaid"]', { timeout: 15_000 });
      expect(await page.textContent('#status')).toBe('Part of the payment has arrived');
      expect(await page.textContent('#mismatch')).toBe('0.25 XNO of 0.4 XNO has arrived. Pay the rest: 0.15 XNO to the same address.');
      expect(await page.getAttribute('#rest-wallet', 'href')).toBe(`nano:${under.receive_address}?amount=${xnoToRaw('0.15')}`);
      expect(await page.locator('.qr').isVisible()).toBe(false);
      await page.screenshot({ path: join(ARTIFACTS, 'checkout-underpaid-360.png') });
      await wallet.send(customer, under.receive_address, xnoToRaw('0.15'));
      await page.waitForSelector('body[data-state="paid"]', { timeout: 15_000 });
      expect(await page.evaluate<boolean | undefined>('window.sameDocument')).toBe(true);
      expect(await page.textContent('#status')).toBe('Paid. Thank you!');
      await close();
      expect(errors).toEqual([]);

      const overPage = await open(over.checkout_url);
      await wallet.send(customer, over.receive_address, xnoToRaw('0.3'));
      await overPage.page.waitForSelector('body[data-state="overpaid"]', { timeout: 15_000 });
      expect(await overPage.page.textContent('#status')).toBe('More than the amount has arrived');
      expect(await overPage.page.textContent('#mismatch')).toBe('0.3 XNO has arrived for 0.2 XNO. Contact the shop for the difference.');
      expect(await overPage.page.locator('#rest-wallet').isVisible()).toBe(false);
      await overPage.close();
      expect(overPage.errors).toEqual([]);
    } finally {
      await server.stop();
    }
  });

  it('answers an unknown or malformed id with a clear 404 page', async () => {
    const base = new URL(checkout.url).origin;
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id', '%3Cscript%3E']) {
      const { page, response, close } = await open(`${base}/checkout/${id}`);
      expect(response?.status()).toBe(404);
      expect(await page.textContent('h1')).toBe('Payment not found');
      await close();
    }
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
    // Playwright's clock (the page's own timers, at the pace of the real clock until told otherwise) lets the test
    // run the default five-second countdown forward instead of waiting it out; it stays with its context.
    const { page, errors, close } = await openAlone(link, { viewport: { width: 360, height: 640 } }, (context) => context.clock.install());
    expect(page.url()).toMatch(new RegExp(`^${sb.url}/checkout/[0-9a-f-]{36}$`));
    const id = page.url().split('/').at(-1) as string;
    const amount = (await page.textContent('#amount')) as string;
    expect(amount).toMatch(/^0\.25\d*$/);
    const uri = `nano:${address}?amount=${xnoToRaw(amount)}`;
    const qr = await page.locator('.qr').boundingBox();
    if (qr === null) expect.fail('the QR code is not shown');
    expect(readQr(await page.screenshot(), qr)).toBe(uri);
    expect(await page.content()).not.toContain(key);
    await pay({ receive_address: address, amount });
    await page.waitForSelector('body[data-state="paid"]', { timeout: 2_000 });
    // The default countdown, from five seconds.
    expect(await page.getAttribute('#redirect', 'data-seconds')).toBe('5');
    expect(await page.textContent('#redirect')).toMatch(/^Returning to the shop in [1-5] s\. Continue now$/);
    await page.clock.runFor(5_000);
    await page.waitForURL(`${shop.url}/thanks?transaction_id=${id}`, { timeout: 15_000 });
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
