import { h, xno } from '../dashboard/layout.js';
import { CSS_PATH } from '../dashboard/assets.js';
import type { ClaimView } from '../ops/requests/refund-claims.js';

/**
 * The page a customer opens from a refund claim link: the amount and the
 * shop, a form for their address, a step that shows the address in full
 * before it is final, and then where the refund stands. No script at all.
 */


function document(shopName: string, testMode: boolean, content: string): string {
  const band = testMode ? '<p class="test-mode" role="note">TEST MODE · nanopay sandbox: test money, not real XNO.</p>' : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><meta name="robots" content="noindex"><title>Refund · ${h(shopName)}</title>
<link rel="icon" href="data:,"><link rel="stylesheet" href="${CSS_PATH}"></head>
<body><header>${band}<div class="bar"><span class="shop">${h(shopName)}</span></div></header><main id="main"><div class="card narrow">${content}</div></main></body></html>
`;
}

export interface ClaimPageInput {
  view: ClaimView;
  token: string;
  shopName: string;
  testMode: boolean;
  /** The address given, to show again (a mistake) or to confirm. */
  address?: string;
  error?: string;
  confirming?: boolean;
}

function what(view: ClaimView): string {
  const order = view.request.order_id === undefined ? '' : ` for order <strong>${h(view.request.order_id)}</strong>`;
  return `<p>The shop refunds <strong>${xno(view.claim.amount_raw)}</strong>${order}.</p>`;
}

export function renderClaimPage(input: ClaimPageInput): string {
  const { view } = input;
  const path = `/claim/${encodeURIComponent(input.token)}`;
  let content: string;
  if (view.claim.status === 'cancelled') content = `<h1>Refund cancelled</h1><p class="error" role="alert">The shop cancelled this refund link. Contact the shop.</p>`;
  else if (view.claim.status === 'claimed') content = `<h1>Your refund</h1>${what(view)}${progress(view)}`;
  else if (view.expired) content = `<h1>Refund link expired</h1><p class="error" role="alert">This link expired at ${h(view.claim.expires_at)}. Ask the shop for a new one.</p>`;
  else if (input.confirming === true && input.address !== undefined)
    content = `<h1>Check your address</h1>${what(view)}<p>It will be sent to:</p><p class="mono">${h(input.address)}</p>
<p class="muted">A refund sent to a wrong address cannot be taken back. This link works once.</p>
<form method="post" action="${path}"><input type="hidden" name="address" value="${h(input.address)}"><input type="hidden" name="confirm" value="yes">
<p><button type="submit">Send the refund to this address</button> <a href="${path}">Change the address</a></p></form>`;
  else
    content = `<h1>Claim your refund</h1>${what(view)}${input.error === undefined ? '' : `<p class="error" role="alert">${h(input.error)}</p>`}
<p>Give the Nano address the refund goes to: an account of your own wallet (not an exchange's deposit address unless it accepts this).</p>
<form method="post" action="${path}"><div><label for="address">Your Nano address</label><input id="address" name="address" required autocomplete="off" spellcheck="false" value="${h(input.address ?? '')}" placeholder="nano_…"></div>
<p><button type="submit">Continue</button></p></form><p class="muted">This link works until ${h(view.claim.expires_at)}.</p>`;
  return document(input.shopName, input.testMode, content);
}

function progress(view: ClaimView): string {
  const to = `<p>To <span class="mono">${h(view.claim.to ?? '')}</span></p>`;
  const refund = view.refund;
  if (refund?.status === 'sent') return `${to}<p class="notice" role="status">Sent. Block <span class="mono">${h(refund.block ?? '')}</span></p>`;
  if (refund?.status === 'failed') return `${to}<p class="error" role="alert">The shop could not send it (${h(refund.error?.message ?? 'refused')}). Contact the shop.</p>`;
  return `${to}<p class="notice" role="status">On its way: the shop sends it shortly. Reload this page to see it sent.</p>`;
}

export function renderClaimMessage(title: string, message: string): string {
  return document('Refund', false, `<h1>${h(title)}</h1><p>${h(message)}</p>`);
}
