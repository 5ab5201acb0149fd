import { createHash } from 'node:crypto';
import type { CheckoutRequest } from '../ops/requests/checkout.js';
import { isFinal, safeRedirect, type CheckoutState, type CheckoutView } from './view.js';

/** Seconds between reloads of a page that gets no live updates (no JavaScript, or too many viewers), unless the shop says otherwise. */
export const DEFAULT_RELOAD_SECONDS = 4;
/** Seconds from the payment to the redirect, unless the shop says otherwise. */
export const DEFAULT_REDIRECT_SECONDS = 5;

/** Text as HTML shows it, never as markup: every page's text that a customer or a shop may have written goes through it. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `:root{color-scheme:light dark;--bg:#eef1f5;--card:#fff;--fg:#141a22;--muted:#4f5967;--accent:#1554c0;--accent-fg:#fff;--ok:#0b6b37;--ok-bg:#e3f5ea;--warn:#9b2f12;--warn-bg:#fbe9e3;--wait-bg:#e8eef9;--border:#d3d9e1;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--card:#171d26;--fg:#e6ebf1;--muted:#a4aebb;--accent:#7aa7ff;--accent-fg:#0b1220;--ok:#5fd896;--ok-bg:#10291b;--warn:#ff9473;--warn-bg:#34160d;--wait-bg:#17233a;--border:#2c3645}}
*{box-sizing:border-box}[hidden]{display:none!important}
body{margin:0;background:var(--bg);color:var(--fg);line-height:1.45;font-size:1rem}
main{max-width:28rem;margin:0 auto;padding:1rem}
.card{background:var(--card);border:1px solid var(--border);border-radius:14px;padding:1.25rem}
h1{font-size:1.3rem;margin:0 0 .75rem}
.status{margin:0 0 1rem;padding:.6rem .8rem;border-radius:8px;font-weight:600;background:var(--wait-bg)}
[data-state=paid] .status{background:var(--ok-bg);color:var(--ok)}
[data-state=expired] .status,[data-state=paid_late] .status,[data-state=refunded] .status,[data-state=partially_refunded] .status,[data-state=underpaid] .status,[data-state=overpaid] .status{background:var(--warn-bg);color:var(--warn)}
.trouble{margin:0 0 1rem;padding:.6rem .8rem;border-radius:8px;background:var(--warn-bg);color:var(--warn)}
.layout{display:grid;gap:1.25rem}
.qr{background:#fff;border-radius:10px;padding:.5rem;max-width:17rem;margin:0 auto}
.qr svg{display:block;width:100%;height:auto}
.wallet{display:block;margin-top:.9rem;text-align:center;background:var(--accent);color:var(--accent-fg);padding:.8rem;border-radius:8px;font-weight:600;text-decoration:none}
dl{margin:0}dt{color:var(--muted);font-size:.9rem;margin-top:.75rem}dt:first-child{margin-top:0}
dd{margin:.2rem 0 0;display:flex;flex-wrap:wrap;align-items:center;gap:.5rem}
.value{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.95rem;overflow-wrap:anywhere;word-break:break-all;min-width:0}
.amount{font-size:1.15rem;font-weight:700}
button{font:inherit;font-size:.9rem;padding:.35rem .8rem;border:1px solid var(--border);border-radius:6px;background:var(--card);color:var(--fg);cursor:pointer}
button:hover{border-color:var(--accent)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.note{color:var(--muted);font-size:.9rem;margin:1rem 0 0}
.paid p{margin:.75rem 0 0}a{color:var(--accent)}
.mismatch{margin:0 0 1.25rem}.mismatch p{margin:0 0 .75rem;font-weight:600}
.test-mode{margin:0;padding:.55rem 1rem;text-align:center;font-weight:700;color:#1d1600;background:repeating-linear-gradient(-45deg,#ffd23f 0 14px,#f2c200 14px 28px);border-bottom:2px solid #b38f00}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (min-width:48rem){main{max-width:52rem;padding:3rem 1.5rem}.card{padding:2rem}.layout{grid-template-columns:17rem 1fr;align-items:start;gap:2rem}[data-state=paid] .layout,[data-state=paid_late] .layout,[data-state=underpaid] .layout,[data-state=overpaid] .layout,[data-state=expired] .layout,[data-state=refunded] .layout,[data-state=partially_refunded] .layout{grid-template-columns:1fr}}`;

/** Copy buttons, live updates over Server-Sent Events, the countdown; the page works without it. */
const SCRIPT = `(() => {
  const body = document.body;
  const live = document.getElementById('announce');
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const source = document.getElementById(button.dataset.copy);
      const text = source.textContent.trim();
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        const range = document.createRange();
        range.selectNodeContents(source);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        document.execCommand('copy');
      }
      live.textContent = button.dataset.done;
      button.textContent = 'Copied';
      setTimeout(() => { button.textContent = 'Copy'; }, 2000);
    });
  }
  let countdown;
  const startCountdown = () => {
    const box = document.getElementById('redirect');
    if (box === null || countdown !== undefined) return;
    let left = Number(box.dataset.seconds);
    const shown = box.querySelector('[data-countdown]');
    shown.textContent = String(left);
    countdown = setInterval(() => {
      left -= 1;
      shown.textContent = String(Math.max(left, 0));
      if (left <= 0) {
        clearInterval(countdown);
        location.assign(box.dataset.href);
      }
    }, 1000);
  };
  const final = (state) => ['paid', 'paid_late', 'refunded', 'partially_refunded'].includes(state);
  const apply = (view) => {
    body.dataset.state = view.state;
    for (const part of document.querySelectorAll('[data-when]')) part.hidden = !part.dataset.when.split(' ').includes(view.state);
    const status = document.getElementById('status');
    status.textContent = status.dataset[view.state];
    document.title = status.dataset[view.state];
    const trouble = document.getElementById('trouble');
    trouble.textContent = view.trouble || '';
    trouble.hidden = !view.trouble;
    if (view.block_hash) {
      document.getElementById('block-hash').textContent = view.block_hash;
      document.getElementById('block').hidden = false;
    }
    const mismatch = document.getElementById('mismatch');
    const said = mismatch.dataset[view.rest ? 'underpaidRest' : view.state];
    if (said) mismatch.textContent = said.replace('{received}', view.received || '').replace('{rest}', view.rest || '');
    document.getElementById('rest').hidden = !view.rest;
    if (view.rest) {
      document.getElementById('rest-amount').textContent = view.rest;
      document.getElementById('rest-wallet').href = view.rest_uri;
    }
    const refund = document.getElementById('refund');
    // Any request may have had money sent back (an overpayment's difference), not only a refunded one.
    refund.hidden = !view.refunded;
    if (view.refunded) refund.textContent = refund.dataset.text.replace('{refunded}', view.refunded);
    if (view.state === 'paid') startCountdown();
  };
  if (body.dataset.state === 'paid') startCountdown();
  if (final(body.dataset.state)) return;
  // Live updates while someone looks: each (re)connection tells the server so. A hidden tab lets go of them, so the
  // shop's reads of this request slow down and stop; coming back, or touching the page after a while, reconnects.
  let events;
  let since = 0;
  const disconnect = () => {
    events?.close();
    events = undefined;
  };
  const connect = () => {
    disconnect();
    since = Date.now();
    const source = new EventSource(body.dataset.events);
    events = source;
    source.addEventListener('status', (event) => {
      const view = JSON.parse(event.data);
      apply(view);
      if (final(view.state)) disconnect();
    });
    // Refused (too many viewers) or gone for good: fall back to reloading, like a page without JavaScript.
    source.addEventListener('error', () => {
      if (source === events && source.readyState === EventSource.CLOSED) setTimeout(() => location.replace(body.dataset.reloadUrl), Number(body.dataset.reload) * 1000);
    });
  };
  const open = () => !final(body.dataset.state);
  connect();
  document.addEventListener('visibilitychange', () => {
    if (!open()) return;
    if (document.hidden) disconnect();
    else connect();
  });
  for (const kind of ['pointerdown', 'keydown', 'touchstart', 'wheel']) {
    addEventListener(kind, () => {
      if (open() && !document.hidden && Date.now() - since > 60000) connect();
    }, { passive: true });
  }
})();`;

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** Nothing from elsewhere: the inline style and script by hash, the QR code inline, live updates from this origin. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  `script-src ${sha256(SCRIPT)}`,
  'img-src data:',
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers of every HTML answer. */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const STATUS_TEXT: Record<CheckoutState, string> = {
  waiting: 'Waiting for your payment…',
  paid: 'Paid. Thank you!',
  paid_late: 'Paid late: this request had expired',
  underpaid: 'Part of the payment has arrived',
  overpaid: 'More than the amount has arrived',
  expired: 'This payment request has expired',
  refunded: 'Refunded',
  partially_refunded: 'Partly refunded',
};

/** What a refund page says, with {refunded} (XNO) filled in here and by the page's script. */
const REFUND_TEXT = 'The shop sent {refunded} XNO back to the account you paid from.';

/**
 * What the customer should do about a payment of another amount, with {received} and {rest} (XNO) filled in here
 * and by the page's script. The rest is offered only when paying it completes the request (the payments add up, and
 * it has not expired); otherwise, and for an overpayment, the shop decides.
 */
function mismatchTexts(amount: string): Record<'underpaidRest' | 'underpaid' | 'overpaid', string> {
  return {
    underpaidRest: `{received} XNO of ${amount} XNO has arrived. Pay the rest: {rest} XNO to the same address.`,
    underpaid: `{received} XNO of ${amount} XNO has arrived. Contact the shop to complete your order.`,
    overpaid: `{received} XNO has arrived for ${amount} XNO. Contact the shop for the difference.`,
  };
}

function mismatchText(texts: ReturnType<typeof mismatchTexts>, view: CheckoutView): string {
  const said = view.rest !== undefined ? texts.underpaidRest : view.state === 'underpaid' || view.state === 'overpaid' ? texts[view.state] : '';
  return said.replace('{received}', view.received ?? '').replace('{rest}', view.rest ?? '');
}

function htmlDocument(title: string, head: string, bodyAttributes: string, content: string, script: boolean, band = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,"><style>${STYLE}</style>${head}</head>
<body${bodyAttributes}>${band}<main><div class="card">${content}</div></main>${script ? `<script>${SCRIPT}</script>` : ''}</body></html>
`;
}

const when = (states: string, current: CheckoutState): string => ` data-when="${states}"${states.split(' ').includes(current) ? '' : ' hidden'}`;

export interface CheckoutPageInput {
  request: CheckoutRequest;
  view: CheckoutView;
  /** The QR code of `request.uri`, an SVG document made by the QR library. */
  qrSvg: string;
  eventsPath: string;
  /** From the payment to the redirect (the countdown, and the page without JavaScript). */
  redirectSeconds: number;
  /** Between reloads of a waiting page without JavaScript, and of one refused live updates. */
  reloadSeconds: number;
  /** The shop's name (shown with the request's order reference, when it has one). */
  shopName?: string;
  /** The request is the sandbox's: the page says, in a band across its top, that this is test money. */
  testMode: boolean;
}

/** As Stripe's test mode: no one should take a sandbox page for a real one, or send real XNO to it. */
const TEST_MODE_BAND = '<p id="test-mode" class="test-mode" role="note">TEST MODE · nanopay sandbox: this is test money, not real XNO. Do not send real Nano here.</p>';

/** The query an automatic reload carries: it keeps the page watched, but is not someone looking (reads may slow down). */
export const AUTOMATIC_RELOAD = 'reload=auto';

/** The checkout page of one request, in its current state; every value from outside is escaped. */
export function renderCheckoutPage({ request, view, qrSvg, eventsPath, redirectSeconds, reloadSeconds, testMode, shopName }: CheckoutPageInput): string {
  const state = view.state;
  const redirect = safeRedirect(request.redirect_url, request.transaction_id);
  // Without JavaScript a page reloads while something may still change for the customer (not once expired).
  const refresh =
    !isFinal(state) && state !== 'expired'
      ? `<noscript><meta http-equiv="refresh" content="${reloadSeconds};url=?${AUTOMATIC_RELOAD}"></noscript>`
      : state === 'paid' && redirect !== undefined
        ? `<noscript><meta http-equiv="refresh" content="${redirectSeconds};url=${escapeHtml(redirect)}"></noscript>`
        : '';
  const statusData = (Object.keys(STATUS_TEXT) as CheckoutState[]).map((s) => ` data-${s}="${escapeHtml(STATUS_TEXT[s])}"`).join('');
  const amount = escapeHtml(request.amount);
  const address = escapeHtml(request.receive_address);
  const uri = escapeHtml(request.uri);
  const hash = view.block_hash === undefined ? '' : escapeHtml(view.block_hash);
  const merchant = [shopName, request.order_id === undefined ? undefined : `Order ${request.order_id}`].filter((part) => part !== undefined);
  const texts = mismatchTexts(request.amount);
  const textData = (Object.keys(texts) as (keyof typeof texts)[]).map((k) => ` data-${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}="${escapeHtml(texts[k])}"`).join('');
  const rest = escapeHtml(view.rest ?? '');
  const content = `<h1>Pay with Nano</h1>${merchant.length === 0 ? '' : `\n<p id="merchant" class="note">${escapeHtml(merchant.join(' · '))}</p>`}
<p id="status" class="status" role="status" aria-live="polite"${statusData}>${escapeHtml(STATUS_TEXT[state])}</p>
<p id="trouble" class="trouble" role="alert"${view.trouble === undefined ? ' hidden' : ''}>${escapeHtml(view.trouble ?? '')}</p>
<div class="layout">
<section${when('waiting', state)} aria-label="Scan or open in a wallet">
<div class="qr" role="img" aria-label="QR code of the payment link: ${amount} XNO to ${address}">${qrSvg}</div>
<a class="wallet" href="${uri}">Open in wallet</a>
</section>
<section aria-label="Payment details">
<div class="mismatch"${when('underpaid overpaid', state)}>
<p id="mismatch"${textData}>${escapeHtml(mismatchText(texts, view))}</p>
<div id="rest"${view.rest === undefined ? ' hidden' : ''}>
<dl><dt>The rest (XNO)</dt>
<dd><span id="rest-amount" class="value amount">${rest}</span><button type="button" data-copy="rest-amount" data-done="Rest copied" aria-label="Copy the rest" hidden>Copy</button></dd></dl>
<a id="rest-wallet" class="wallet" href="${escapeHtml(view.rest_uri ?? '')}">Pay the rest in a wallet</a>
</div>
</div>
<dl>${
  request.fiat === undefined
    ? ''
    : `
<dt>Price</dt>
<dd><span id="price" class="value">${escapeHtml(`${request.fiat.amount} ${request.fiat.currency}`)}</span> <span class="note">at ${escapeHtml(`${request.fiat.rate} ${request.fiat.currency}`)} per XNO${
        request.fiat.quote_expires_at === undefined ? '' : `, held until <span id="quote-expires-at">${escapeHtml(request.fiat.quote_expires_at)}</span>`
      }</span></dd>`
}
<dt>Amount (XNO)</dt>
<dd><span id="amount" class="value amount">${amount}</span><button type="button" data-copy="amount" data-done="Amount copied" aria-label="Copy the amount" hidden>Copy</button></dd>
<dt>To address</dt>
<dd><span id="address" class="value">${address}</span><button type="button" data-copy="address" data-done="Address copied" aria-label="Copy the address" hidden>Copy</button></dd>
</dl>
<p class="note"${when('waiting', state)}>Send exactly this amount: its last digits identify your payment. This page updates by itself.</p>
<div class="paid"${when('paid', state)}>
<p id="block"${hash === '' ? ' hidden' : ''}>Payment received in block <span id="block-hash" class="value">${hash}</span></p>
${
  redirect === undefined
    ? ''
    : `<p id="redirect" data-href="${escapeHtml(redirect)}" data-seconds="${redirectSeconds}">Returning to the shop in <span data-countdown>${redirectSeconds}</span> s. <a href="${escapeHtml(redirect)}">Continue now</a></p>`
}
</div>
<p class="note"${when('expired', state)}>Do not send a payment for this request any more; ask the shop for a new one.</p>
<p id="refund" class="note"${view.refunded === undefined ? ' hidden' : ''} data-text="${escapeHtml(REFUND_TEXT)}">${escapeHtml(REFUND_TEXT.replace('{refunded}', view.refunded ?? ''))}</p>
<p class="note"${when('paid_late', state)}>Your payment arrived after this request expired, so it was not accepted by itself. Contact the shop: it completes your order or refunds you.</p>
</section>
</div>
<p id="announce" class="sr-only" aria-live="polite"></p>`;
  return htmlDocument(
    STATUS_TEXT[state],
    refresh,
    ` data-state="${state}" data-events="${escapeHtml(eventsPath)}" data-reload="${reloadSeconds}" data-reload-url="?${AUTOMATIC_RELOAD}"`,
    content,
    true,
    testMode ? TEST_MODE_BAND : '',
  );
}

/** A page for what cannot be shown (unknown request, bad link), with the reason. */
export function renderMessagePage(title: string, message: string): string {
  return htmlDocument(title, '', '', `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`, false);
}
