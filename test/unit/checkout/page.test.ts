import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REDIRECT_SECONDS, DEFAULT_RELOAD_SECONDS, PAGE_HEADERS, renderCheckoutPage, renderMessagePage } from '../../../src/checkout/page.js';

const CONTENT_SECURITY_POLICY = PAGE_HEADERS['content-security-policy'] as string;
import { checkoutRoutes } from '../../../src/checkout/routes.js';
import { startCheckoutServer } from '../../../src/checkout/server.js';
import { safeRedirect, viewOf } from '../../../src/checkout/view.js';
import { NanoPayError } from '../../../src/errors.js';
import { CheckoutWatcher } from '../../../src/checkout/watcher.js';
import type { CheckoutObservation, CheckoutRequest } from '../../../src/ops/requests/checkout.js';
import type { RequestState } from '../../../src/ops/requests/matching.js';

const address = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const request: CheckoutRequest = {
  transaction_id: '0b8f2a8e-1c1d-4c4e-9a55-1f0f7f3a9b10',
  receive_address: address,
  amount: '1.500000000000000000000000203744',
  amount_raw: '1500000000000000000000000203744',
  uri: `nano:${address}?amount=1500000000000000000000000203744`,
  redirect_url: 'https://shop.example/thanks?order=7&x=1',
};
const render = (over: Partial<CheckoutRequest>, observation: CheckoutObservation, now = 0, timing = { redirectSeconds: DEFAULT_REDIRECT_SECONDS, reloadSeconds: DEFAULT_RELOAD_SECONDS }, testMode = false): string =>
  renderCheckoutPage({ request: { ...request, ...over }, view: viewOf(observation, now), qrSvg: '<svg></svg>', eventsPath: '/checkout/x/events', ...timing, testMode });
const scriptOf = (html: string): string => /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] as string;
const visible = (html: string, when: string): boolean => new RegExp(`data-when="${when}"(?! hidden)`).test(html);

describe('checkout page rendering', () => {
  it("shows a test-mode band on a sandbox request's page, and none on a real one", () => {
    const band = /<p id="test-mode" class="test-mode" role="note">TEST MODE · nanopay sandbox: this is test money, not real XNO\. Do not send real Nano here\.<\/p>/;
    expect(render({}, { state: 'waiting' }, 0, undefined, true)).toMatch(band);
    expect(render({}, { state: 'paid' }, 0, undefined, true)).toMatch(band);
    expect(render({}, { state: 'waiting' })).not.toContain('id="test-mode"');
    expect(render({}, { state: 'waiting' })).not.toContain('TEST MODE');
  });

  it('shows why the status cannot be read, escaped, and nothing when it can', () => {
    const page = (trouble?: string): string =>
      renderCheckoutPage({ request, view: { state: 'waiting', is_paid: false, ...(trouble === undefined ? {} : { trouble }) }, qrSvg: '<svg></svg>', eventsPath: '/e', redirectSeconds: 5, reloadSeconds: 4, testMode: false });
    expect(page('Cannot <check> now')).toContain('<p id="trouble" class="trouble" role="alert">Cannot &#60;check&#62; now</p>');
    expect(page()).toContain('<p id="trouble" class="trouble" role="alert" hidden></p>');
  });

  it('waiting: amount, address, wallet link, a reload for pages without JavaScript, no redirect yet', () => {
    const html = render({}, { state: 'waiting' });
    expect(html).toContain('data-state="waiting"');
    expect(html).toContain(`>${request.amount}<`);
    expect(html).toContain(`>${address}<`);
    expect(html).toContain(`href="nano:${address}?amount=1500000000000000000000000203744"`);
    expect(html).toMatch(/<noscript><meta http-equiv="refresh" content="\d+;url=\?reload=auto"><\/noscript>/);
    expect(visible(html, 'waiting')).toBe(true);
    expect(visible(html, 'paid')).toBe(false);
    expect(html).toContain('role="status"');
  });

  it('paid: the block hash, the QR code hidden, a redirect after a countdown (also without JavaScript)', () => {
    const hash = 'A'.repeat(64);
    const html = render({}, { state: 'paid', block_hash: hash });
    expect(html).toContain('data-state="paid"');
    expect(html).toContain(`>${hash}<`);
    expect(visible(html, 'waiting')).toBe(false);
    expect(visible(html, 'paid')).toBe(true);
    expect(html).toContain('<noscript><meta http-equiv="refresh" content="5;url=https://shop.example/thanks?order=7&#38;x=1&#38;transaction_id=0b8f2a8e-1c1d-4c4e-9a55-1f0f7f3a9b10"></noscript>');
    expect(html).toContain('data-href="https://shop.example/thanks?order=7&#38;x=1&#38;transaction_id=0b8f2a8e-1c1d-4c4e-9a55-1f0f7f3a9b10"');
    expect(html).toContain('data-seconds="5">Returning to the shop in <span data-countdown>5</span> s.');
  });

  it('the redirect carries the transaction id, the shop\'s own query kept as it is and a fragment last; only http(s)', () => {
    const id = request.transaction_id;
    expect(safeRedirect('https://shop.example/thanks', id)).toBe(`https://shop.example/thanks?transaction_id=${id}`);
    expect(safeRedirect('https://shop.example/thanks?', id)).toBe(`https://shop.example/thanks?transaction_id=${id}`);
    expect(safeRedirect('https://shop.example/t?q=a%20b&flag&x=1+2#done', id)).toBe(`https://shop.example/t?q=a%20b&flag&x=1+2&transaction_id=${id}#done`);
    expect(safeRedirect('http://127.0.0.1:8080/ok?order=7', id)).toBe(`http://127.0.0.1:8080/ok?order=7&transaction_id=${id}`);
    for (const bad of ['javascript:alert(1)', 'ftp://shop.example/', '/relative', undefined]) expect(safeRedirect(bad, id)).toBeUndefined();
  });

  it('by default reloads every four seconds and redirects after five; the shop can set both, and the script (allowed by its hash) stays the same', () => {
    expect(render({}, { state: 'waiting' })).toContain('<noscript><meta http-equiv="refresh" content="4;url=?reload=auto"></noscript>');
    expect(render({}, { state: 'waiting' })).toContain('data-reload="4"');
    const timing = { redirectSeconds: 2, reloadSeconds: 3 };
    const waiting = render({}, { state: 'waiting' }, 0, timing);
    expect(waiting).toContain('<noscript><meta http-equiv="refresh" content="3;url=?reload=auto"></noscript>');
    // The script reads it there when live updates are refused.
    expect(waiting).toContain('data-reload="3"');
    const paid = render({}, { state: 'paid' }, 0, timing);
    expect(paid).toContain('<noscript><meta http-equiv="refresh" content="2;url=https://shop.example/thanks?order=7&#38;x=1&#38;transaction_id=0b8f2a8e-1c1d-4c4e-9a55-1f0f7f3a9b10"></noscript>');
    expect(paid).toContain('data-seconds="2">Returning to the shop in <span data-countdown>2</span> s.');
    expect(scriptOf(waiting)).toBe(scriptOf(render({}, { state: 'waiting' })));
    expect(scriptOf(paid)).toBe(scriptOf(render({}, { state: 'paid' })));
  });

  it("the checkout server renders its pages with the shop's redirect delay and reload interval", async () => {
    const read = async (): Promise<CheckoutObservation> => ({ state: 'waiting' });
    const server = await startCheckoutServer({ host: '127.0.0.1', port: 0, read, redirectSeconds: 2, reloadSeconds: 3 });
    const plain = await startCheckoutServer({ host: '127.0.0.1', port: 0, read });
    try {
      const html = await (await fetch(server.add(request, { state: 'paid' }))).text();
      expect(html).toContain('<noscript><meta http-equiv="refresh" content="2;url=https://shop.example/thanks?order=7&#38;x=1&#38;transaction_id=0b8f2a8e-1c1d-4c4e-9a55-1f0f7f3a9b10"></noscript>');
      expect(html).toContain('data-reload="3"');
      const defaults = await (await fetch(plain.add(request, { state: 'paid' }))).text();
      expect(defaults).toContain('<noscript><meta http-equiv="refresh" content="5;url=https://shop.example/thanks?order=7&#38;x=1&#38;transaction_id=0b8f2a8e-1c1d-4c4e-9a55-1f0f7f3a9b10"></noscript>');
      expect(defaults).toContain('data-reload="4"');
    } finally {
      await Promise.all([server.close(), plain.close()]);
    }
  });

  it('paid late: said as such, the customer sent to the shop; no redirect, nothing more to follow', () => {
    const html = render({}, { state: 'paid_late', expires_at: 1 }, 2);
    expect(html).toContain('data-state="paid_late"');
    expect(html).toContain('<title>Paid late: this request had expired</title>');
    expect(visible(html, 'paid_late')).toBe(true);
    expect(visible(html, 'paid')).toBe(false);
    expect(html).not.toContain('http-equiv="refresh"');
  });

  it('under- and overpaid: what arrived and what to do; the rest is offered only before the expiry', () => {
    const rest = { state: 'underpaid' as const, received: '0.25', rest: '1.25', rest_uri: `nano:${address}?amount=1250000000000000000000000203744` };
    const open = render({}, { ...rest, expires_at: 10 }, 2);
    expect(open).toContain(`<p id="mismatch"`);
    expect(open).toContain(`>0.25 XNO of ${request.amount} XNO has arrived. Pay the rest: 1.25 XNO to the same address.</p>`);
    expect(open).toContain(`<a id="rest-wallet" class="wallet" href="${rest.rest_uri}">`);
    expect(open).toMatch(/<noscript><meta http-equiv="refresh"/);
    const late = render({}, { ...rest, expires_at: 1 }, 2);
    expect(late).toContain(`>0.25 XNO of ${request.amount} XNO has arrived. Contact the shop to complete your order.</p>`);
    expect(late).toContain('<div id="rest" hidden>');
    const over = render({}, { state: 'overpaid', received: '2' });
    expect(over).toContain(`>2 XNO has arrived for ${request.amount} XNO. Contact the shop for the difference.</p>`);
    expect(visible(over, 'underpaid overpaid')).toBe(true);
    expect(visible(over, 'waiting')).toBe(false);
  });

  it('shows money sent back whatever the state, and paid only for a paid request (partly refunded included)', () => {
    const overpaid = viewOf({ state: 'overpaid', received: '1.2', refunded: '0.2' }, 0);
    expect(overpaid).toMatchObject({ state: 'overpaid', is_paid: false, refunded: '0.2' });
    const html = render({}, { state: 'overpaid', received: '1.2', refunded: '0.2' });
    expect(html).toMatch(/<p id="refund" class="note" data-text="[^"]*">The shop sent 0.2 XNO back/);
    expect(viewOf({ state: 'partially_refunded', refunded: '0.1' }, 0).is_paid).toBe(true);
    expect(viewOf({ state: 'refunded', refunded: '1' }, 0).is_paid).toBe(false);
  });

  it('expired only when the service gives an expiry that has passed, and never once paid', () => {
    expect(viewOf({ state: 'waiting', expires_at: 1_000 }, 2_000)).toEqual({ state: 'expired', is_paid: false });
    expect(viewOf({ state: 'waiting', expires_at: 3_000 }, 2_000)).toEqual({ state: 'waiting', is_paid: false });
    expect(viewOf({ state: 'paid', expires_at: 1_000 }, 2_000)).toEqual({ state: 'paid', is_paid: true });
    const html = render({}, { state: 'waiting', expires_at: 1 }, 2);
    expect(html).toContain('data-state="expired"');
    expect(html).toMatch(/<p id="refund" class="note" hidden/);
    expect(visible(html, 'expired')).toBe(true);
    expect(visible(html, 'waiting')).toBe(false);
    expect(html).not.toContain('http-equiv="refresh"');
  });

  it('redirects only to http(s) URLs, and escapes everything that comes from outside', () => {
    for (const url of ['javascript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'nano:x', 'not a url']) {
      const html = render({ redirect_url: url }, { state: 'paid' });
      expect(html).not.toContain('id="redirect"');
      expect(html).not.toContain(';url=');
      expect(html).not.toContain('alert(1)</script>');
    }
    const hostile = render({ redirect_url: 'https://x.example/"><script>alert(1)</script>', amount: '<b>1</b>' }, { state: 'paid', block_hash: '"><i>' });
    expect(hostile).not.toMatch(/<script>alert|<b>1|<i>/);
    expect(hostile).toContain('&#60;b&#62;1&#60;/b&#62;');
    expect(renderMessagePage('<x>', '"y"')).toContain('<h1>&#60;x&#62;</h1><p>&#34;y&#34;</p>');
  });

  it('the Content-Security-Policy allows exactly the inline style and script it serves, and nothing from elsewhere', () => {
    const html = render({}, { state: 'waiting' });
    const hash = (s: string): string => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] as string;
    const script = scriptOf(html);
    expect(CONTENT_SECURITY_POLICY).toContain(`style-src ${hash(style)}`);
    expect(CONTENT_SECURITY_POLICY).toContain(`script-src ${hash(script)}`);
    expect(CONTENT_SECURITY_POLICY).toMatch(/^default-src 'none'/);
    // Nothing is loaded from elsewhere: no src at all, one link (the empty icon, so no favicon request).
    expect(html).not.toMatch(/\ssrc=/);
    expect(html.match(/<link[^>]*>/g)).toEqual(['<link rel="icon" href="data:,">']);
  });
});

describe('the shared poller', () => {
  const setup = (): { watcher: CheckoutWatcher; reads: string[]; clock: { now: number }; answer: { state: RequestState } } => {
    const reads: string[] = [];
    const clock = { now: 0 };
    const answer: { state: RequestState } = { state: 'waiting' };
    const watcher = new CheckoutWatcher({
      read: async (id) => {
        reads.push(id);
        return { ...answer };
      },
      intervalMs: 1000,
      viewGraceMs: 10_000,
      now: () => clock.now,
    });
    watcher.add(request, { state: 'waiting' });
    return { watcher, reads, clock, answer };
  };

  it('reads nothing for a request nobody watches, and does not know any other request', async () => {
    const { watcher, reads } = setup();
    await watcher.tick();
    expect(reads).toEqual([]);
    expect(watcher.view('11111111-1111-4111-8111-111111111111')).toBeUndefined();
    await watcher.tick();
    expect(reads).toEqual([]);
  });

  it('reads once a round however many pages watch, tells every page, and stops once paid', async () => {
    const { watcher, reads, answer } = setup();
    const seen: string[][] = Array.from({ length: 25 }, () => []);
    seen.forEach((log) => watcher.subscribe(request.transaction_id, (v) => log.push(v.state)));
    for (let i = 0; i < 100; i++) watcher.view(request.transaction_id);
    await watcher.tick();
    await watcher.tick();
    expect(reads).toHaveLength(2);
    answer.state = 'paid';
    await watcher.tick();
    expect(reads).toHaveLength(3);
    expect(seen.every((log) => log.join() === 'paid')).toBe(true);
    await watcher.tick();
    expect(reads).toHaveLength(3);
  });

  it('stops reading when the last page has gone and page views grow old', async () => {
    const { watcher, reads, clock } = setup();
    const leave = watcher.subscribe(request.transaction_id, () => undefined);
    await watcher.tick();
    leave();
    clock.now = 5_000;
    await watcher.tick();
    expect(reads).toHaveLength(2);
    clock.now = 20_000;
    await watcher.tick();
    expect(reads).toHaveLength(2);
    watcher.view(request.transaction_id);
    await watcher.tick();
    expect(reads).toHaveLength(3);
  });
});

describe('a page nobody looks at does not drain the credits it lives on', () => {
  /** A request watched by one open page (live updates), read by a reader that may fail, on a clock the test moves. */
  const watched = (fail?: () => NanoPayError | undefined) => {
    const clock = { now: 0 };
    let reads = 0;
    const watcher = new CheckoutWatcher({
      read: async () => {
        reads += 1;
        const error = fail?.();
        if (error !== undefined) throw error;
        return { state: 'waiting' };
      },
      intervalMs: 1000,
      viewGraceMs: 10_000,
      now: () => clock.now,
    });
    watcher.add(request, { state: 'waiting' });
    const views: (string | undefined)[] = [];
    watcher.subscribe(request.transaction_id, (v) => views.push(v.trouble));
    /** Runs `rounds` rounds, one a second; the reads they made. */
    const run = async (rounds: number): Promise<number> => {
      const before = reads;
      for (let i = 0; i < rounds; i++) {
        clock.now += 1000;
        await watcher.tick();
      }
      return reads - before;
    };
    return { watcher, clock, run, views };
  };

  it('reads every second for two minutes after a look, then every 2, 4, 8… rounds, at most once a minute; a look brings it back at once', async () => {
    const { watcher, run } = watched();
    expect(await run(120)).toBe(120);
    expect(await run(60)).toBe(30);
    expect(await run(60)).toBe(15);
    // An hour later it reads once a minute: about 60 reads an hour instead of 3600.
    await run(10 * 60);
    expect(await run(60 * 60)).toBe(60);
    // An automatic reload (a page without JavaScript) keeps it watched but is nobody looking.
    watcher.view(request.transaction_id, { looked: false });
    expect(await run(30)).toBeLessThanOrEqual(1);
    // A person opens the page: a stale status is read at once (paced), and every round again.
    watcher.view(request.transaction_id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await run(10)).toBe(10);
  });

  it('says on the page why the status cannot be read: at once when it will not pass (no credits), after three failures otherwise, and reads slow down meanwhile', async () => {
    let failure: NanoPayError | undefined = new NanoPayError('INSUFFICIENT_CREDITS', 'This API key has 0 credits');
    const { watcher, run, views } = watched(() => failure);
    await run(1);
    const trouble = watcher.view(request.transaction_id)?.trouble;
    expect(trouble).toMatch(/cannot check your payment right now: the shop's account with the payment service has run out of credits/);
    expect(trouble).not.toMatch(/API key|0 credits/);
    // The error names the merchant's fix (a nanopay command); the customer's page keeps to the shop's words.
    expect(failure.hint).toContain('nanopay credits topup 1000');
    expect(trouble).not.toMatch(/nanopay|topup|top up/i);
    // Failing reads back off: 2, 4, 8… rounds apart.
    expect(await run(30)).toBeLessThanOrEqual(4);
    failure = undefined;
    await run(64);
    expect(watcher.view(request.transaction_id)?.trouble).toBeUndefined();
    expect(views.at(-1)).toBeUndefined();

    failure = new NanoPayError('REQUEST_ERROR', 'The service did not answer');
    await run(2);
    expect(watcher.view(request.transaction_id)?.trouble).toBeUndefined();
    await run(6);
    expect(watcher.view(request.transaction_id)?.trouble).toMatch(/the payment service cannot be reached/);
  });
});

describe('the checkout server cannot move money', () => {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

  /** Every module of ours src/checkout/server.ts loads at run time (type-only imports vanish). */
  function runtimeGraph(file: string, seen = new Set<string>()): Set<string> {
    seen.add(relative(root, file));
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/^import\s+(?!type\s)[^'"]*?from\s+'(\.[^']+)'|^export\s+(?!type\s)[^'"]*?from\s+'(\.[^']+)'/gm)) {
      const target = join(dirname(file), (match[1] ?? match[2]) as string).replace(/\.js$/, '.ts');
      if (!seen.has(relative(root, target))) runtimeGraph(target, seen);
    }
    return seen;
  }

  it('loads no operation, key store, signer, proof of work or API client', () => {
    const graph = [...runtimeGraph(join(root, 'src/checkout/server.ts'))];
    expect(graph).toContain('src/checkout/routes.ts');
    expect(graph.filter((f) => /^src\/(ops|wallet|work|api|nano|sandbox)\//.test(f))).toEqual([]);
  });

  it('serves GETs only', () => {
    const watcher = new CheckoutWatcher({ read: async () => ({ state: 'waiting' }), intervalMs: 1000, viewGraceMs: 1000 });
    expect(checkoutRoutes(watcher).map((r) => r.method)).toEqual(['GET', 'GET']);
  });
});
