import type { ServerResponse } from 'node:http';
import { NanoPayError } from '../errors.js';
import { RESPONDED, type Call, type Route } from '../http/server.js';
import type { ClaimView } from '../ops/requests/refund-claims.js';
import { DASHBOARD_HEADERS } from '../dashboard/layout.js';
import { renderClaimMessage, renderClaimPage, type ClaimPageInput } from './claim-page.js';

export interface ClaimRoutesOptions {
  shopName: string;
  testMode: () => boolean;
  view(token: string): Promise<ClaimView | undefined>;
  /** Records the customer's address and the refund (once); the answer is the claim as it now stands. */
  claim(token: string, address: string): Promise<ClaimView>;
}

function send(res: ServerResponse, status: number, html: string): typeof RESPONDED {
  // The token is in the URL: its referrer goes to this origin only (same-origin), which also lets the form's Origin through.
  res.writeHead(status, { ...DASHBOARD_HEADERS, 'content-length': Buffer.byteLength(html) });
  res.end(html);
  return RESPONDED;
}

const NOT_FOUND = renderClaimMessage('Refund link not found', 'This refund link is not valid. Check the link, or ask the shop for a new one.');

/** A form of another site posting here: refused (the token in the path is the credential, the browser says where it comes from). */
function fromThisSite(call: Call): boolean {
  const site = call.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = call.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === call.headers.host;
  } catch {
    return false;
  }
}

/** The customer's page of a refund claim (public, like the checkout page): GET shows it, POST takes the address, then its confirmation. */
export function claimRoutes(options: ClaimRoutesOptions): Route[] {
  const input = (view: ClaimView, token: string, more: Partial<ClaimPageInput> = {}): ClaimPageInput => ({ view, token, shopName: options.shopName, testMode: options.testMode(), ...more });
  return [
    {
      method: 'GET',
      path: '/claim/:token',
      secretParams: ['token'],
      handle: async (call) => {
        const token = call.params.token as string;
        const view = await options.view(token);
        return view === undefined ? send(call.response, 404, NOT_FOUND) : send(call.response, 200, renderClaimPage(input(view, token)));
      },
    },
    {
      method: 'POST',
      path: '/claim/:token',
      secretParams: ['token'],
      form: true,
      maxBodyBytes: 2048,
      handle: async (call) => {
        const token = call.params.token as string;
        const view = await options.view(token);
        if (view === undefined) return send(call.response, 404, NOT_FOUND);
        if (!fromThisSite(call)) return send(call.response, 403, renderClaimMessage('Refused', 'This form is taken from its own page only.'));
        const address = typeof call.body.address === 'string' ? call.body.address.trim() : '';
        if (view.claim.status !== 'open' || view.expired) return send(call.response, 409, renderClaimPage(input(view, token)));
        if (call.body.confirm !== 'yes') {
          if (!/^(nano|xrb)_[13][13456789abcdefghijkmnopqrstuwxyz]{59}$/.test(address)) {
            return send(call.response, 400, renderClaimPage(input(view, token, { address, error: 'That is not a Nano address: it starts with nano_ and has 65 characters in all.' })));
          }
          return send(call.response, 200, renderClaimPage(input(view, token, { address, confirming: true })));
        }
        try {
          return send(call.response, 200, renderClaimPage(input(await options.claim(token, address), token)));
        } catch (error) {
          if (!(error instanceof NanoPayError)) throw error;
          const now = (await options.view(token)) ?? view;
          return send(call.response, error.status, renderClaimPage(input(now, token, { address, error: error.message })));
        }
      },
    },
  ];
}
