import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { NanoPayError } from '../errors.js';
import type { Readiness } from '../http/health.js';
import { RESPONDED, type Call, type Route } from '../http/server.js';
import { sendStream } from '../http/stream.js';
import { xnoToRaw } from '../nano/index.js';
import { exportFormat, exportQuery, exportRequests } from '../ops/requests/export.js';
import { resendWebhook } from '../shop/deliver.js';
import { checkCsrf, clearedSessionCookie, operatorSessions, sessionCookie, type OperatorSession } from '../shop/operator-sessions.js';
import { can, type Action } from '../shop/roles.js';
import type { RefundRecord } from '../store/refunds.js';
import { listClaims, type ClaimShown } from '../ops/requests/refund-claims.js';
import type { Store } from '../store/store.js';
import { DASHBOARD_CSS, DASHBOARD_JS, CSS_PATH, JS_PATH } from './assets.js';
import { page, redirect, sendPage, type PageFrame } from './layout.js';
import type { LiveChanges } from './live.js';
import { orderContent, refundable, refundConfirmContent, type OrderView } from './order-page.js';
import { ordersContent, ordersQuery, ordersRegion } from './orders-page.js';
import { errorContent, exportContent, healthContent, signInContent, sweepsContent } from './other-pages.js';

export interface DashboardOptions {
  store: Store;
  shopName: string;
  testMode: () => boolean;
  /** The public URL is https: the session cookie is Secure. */
  secureCookie: boolean;
  /** The host of the public URL (behind a proxy that rewrites Host): forms sent from there are this server's too. */
  publicHost?: string;
  checkoutUrl(id: string): string;
  /** Records a refund order, as the API's POST /api/v1/requests/{id}/refunds does (a signer carries it out). */
  refund(id: string, body: Record<string, unknown>, idempotencyKey: string | undefined): Promise<{ refund: Omit<RefundRecord, 'fingerprint'>; created: boolean }>;
  /** Makes a refund claim (its link's token is in the answer only), and the link's URL. */
  createClaim(id: string, body: Record<string, unknown>): Promise<{ claim: ClaimShown; token: string }>;
  claimUrl(token: string): string;
  readiness?: Readiness;
  live: LiveChanges;
}

/**
 * The operator dashboard (checkout serve, under /dashboard): server-rendered
 * pages for people, signed in with an operator's name and password. Every page
 * needs a session; every form that changes something carries the session's
 * CSRF token and must come from this origin; every action checks the
 * operator's role, whatever the page showed.
 */
export function dashboardRoutes(options: DashboardOptions): Route[] {
  const { store } = options;
  const sessions = operatorSessions(store);
  const secure = options.secureCookie;
  const frame = (title: string, operator?: OperatorSession, current?: PageFrame['current']): PageFrame => ({
    title,
    shopName: options.shopName,
    testMode: options.testMode(),
    ...(operator === undefined ? {} : { operator }),
    ...(current === undefined ? {} : { current }),
  });

  /** A page: a signed-in operator with `action`'s right, or the sign-in page; a refusal as a page, not JSON. */
  const guarded =
    (action: Action, handle: (call: Call, operator: OperatorSession) => Promise<typeof RESPONDED>, post = false) =>
    async (call: Call): Promise<typeof RESPONDED> => {
      let operator: OperatorSession | undefined;
      try {
        if (post) sameOrigin(call, options.publicHost);
        operator = await sessions.sessionOf(call.headers.cookie);
        if (operator === undefined) {
          if (post) throw new NanoPayError('UNAUTHORIZED', 'Your session ended: sign in again');
          return redirect(call.response, '/dashboard/sign-in');
        }
        if (post) checkCsrf(operator, call.body.csrf);
        if (!can(operator.role, action)) throw new NanoPayError('FORBIDDEN', `Your role (${operator.role}) may not do this: it needs the ${action} role`);
        return await handle(call, operator);
      } catch (error) {
        if (!(error instanceof NanoPayError) || call.response.headersSent) throw error;
        return sendPage(call.response, error.status, page(frame(error.status === 403 ? 'Not allowed' : 'Could not do that', operator), errorContent(error.status === 403 ? 'Not allowed' : 'Could not do that', error.message)));
      }
    };

  const orderView = async (id: string, operator: OperatorSession, said: { notice?: string; error?: string } = {}): Promise<OrderView> => {
    const request = await store.shop.get(id.toLowerCase());
    if (request === undefined) throw new NanoPayError('NOT_FOUND', 'No such order');
    const [refunds, events, claims] = await Promise.all([store.refunds.ofRequest(request.id), store.shop.eventsOf(request.id), listClaims(store, request.id)]);
    return { request, refunds: refunds.map(({ fingerprint: _f, ...shown }) => shown), events, claims, checkoutUrl: options.checkoutUrl(request.id), operator, ...said };
  };
  const showOrder = async (res: ServerResponse, id: string, operator: OperatorSession, said: { notice?: string; error?: string } = {}): Promise<typeof RESPONDED> => {
    const view = await orderView(id, operator, said);
    return sendPage(res, said.error === undefined ? 200 : 400, page(frame(`Order ${view.request.order_id ?? view.request.id}`, operator, 'orders'), orderContent(view)));
  };

  const asset = (path: string, type: string, body: string): Route => ({
    method: 'GET',
    path,
    handle: ({ response }) => {
      response.writeHead(200, { 'content-type': type, 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(body) });
      response.end(body);
      return RESPONDED;
    },
  });

  return [
    asset(CSS_PATH, 'text/css; charset=utf-8', DASHBOARD_CSS),
    asset(JS_PATH, 'text/javascript; charset=utf-8', DASHBOARD_JS),
    { method: 'GET', path: '/dashboard', handle: ({ response }) => redirect(response, '/dashboard/orders') },
    {
      method: 'GET',
      path: '/dashboard/sign-in',
      handle: async ({ response }) => sendPage(response, 200, page(frame('Sign in'), signInContent({ noOperators: (await store.access.operators()).length === 0 }))),
    },
    {
      method: 'POST',
      path: '/dashboard/sign-in',
      form: true,
      handle: async (call) => {
        const name = typeof call.body.name === 'string' ? call.body.name : '';
        try {
          sameOrigin(call, options.publicHost);
          const signedIn = await sessions.signIn(name, typeof call.body.password === 'string' ? call.body.password : '', call.request.socket.remoteAddress ?? '?');
          return redirect(call.response, '/dashboard/orders', { 'set-cookie': sessionCookie(signedIn, { secure }) });
        } catch (error) {
          if (!(error instanceof NanoPayError)) throw error;
          return sendPage(call.response, error.status, page(frame('Sign in'), signInContent({ error: error.message, name, noOperators: false })));
        }
      },
    },
    {
      method: 'POST',
      path: '/dashboard/sign-out',
      form: true,
      handle: guarded(
        'read',
        async (call) => {
          await sessions.signOut(call.headers.cookie);
          return redirect(call.response, '/dashboard/sign-in', { 'set-cookie': clearedSessionCookie({ secure }) });
        },
        true,
      ),
    },
    {
      method: 'GET',
      path: '/dashboard/orders',
      handle: guarded('read', async (call, operator) => {
        const query = ordersQuery(call.query);
        const [found, totals] = await Promise.all([store.shop.search(query.search), store.shop.totals(query.filter)]);
        const region = ordersRegion(query, found, totals);
        if (call.query.get('partial') === '1') return sendPage(call.response, 200, region);
        return sendPage(call.response, 200, page(frame('Orders', operator, 'orders'), ordersContent(query, region)));
      }),
    },
    {
      method: 'GET',
      path: '/dashboard/live',
      endless: true,
      handle: guarded('read', async (call) => options.live.stream(call)),
    },
    {
      method: 'GET',
      path: '/dashboard/orders/:id',
      handle: guarded('read', async (call, operator) => showOrder(call.response, call.params.id as string, operator)),
    },
    {
      method: 'POST',
      path: '/dashboard/orders/:id/refund',
      form: true,
      handle: guarded(
        'refund',
        async (call, operator) => {
          const id = (call.params.id as string).toLowerCase();
          const amount = typeof call.body.amount === 'string' ? call.body.amount.trim() : '';
          const to = typeof call.body.to === 'string' && call.body.to !== '' ? call.body.to : undefined;
          if (call.body.confirm !== 'yes') {
            // The review: what would be refunded, and where, before anything is recorded.
            const request = (await orderView(id, operator)).request;
            const { leftRaw, payers } = refundable(request);
            let amountRaw = leftRaw;
            try {
              if (amount !== '') amountRaw = xnoToRaw(amount);
            } catch {
              return showOrder(call.response, id, operator, { error: 'The amount must be XNO, such as 0.5' });
            }
            if (amountRaw <= 0n || amountRaw > leftRaw) return showOrder(call.response, id, operator, { error: `The amount must be more than 0 and at most what is left (${leftRaw} raw)` });
            const destination = to ?? (payers.length === 1 ? payers[0] : undefined);
            if (destination === undefined) return showOrder(call.response, id, operator, { error: 'Choose the account to refund' });
            return sendPage(
              call.response,
              200,
              page(frame('Confirm the refund', operator, 'orders'), refundConfirmContent({ request, operator, amountRaw, amountGiven: amount, to: destination, key: `dashboard-${randomUUID()}` })),
            );
          }
          const key = typeof call.body.key === 'string' && call.body.key.startsWith('dashboard-') ? call.body.key : undefined;
          try {
            const { refund } = await options.refund(id, { ...(amount === '' ? {} : { amount }), ...(to === undefined ? {} : { to }) }, key);
            return showOrder(call.response, id, operator, { notice: `Refund ${refund.id} of ${refund.amount} XNO to ${refund.to} is recorded; the shop's signer sends it.` });
          } catch (error) {
            if (!(error instanceof NanoPayError)) throw error;
            return showOrder(call.response, id, operator, { error: error.message });
          }
        },
        true,
      ),
    },
    {
      method: 'POST',
      path: '/dashboard/orders/:id/claim',
      form: true,
      handle: guarded(
        'refund',
        async (call, operator) => {
          const id = (call.params.id as string).toLowerCase();
          const amount = typeof call.body.amount === 'string' ? call.body.amount.trim() : '';
          const expires = typeof call.body.expires_in === 'string' ? call.body.expires_in : '';
          try {
            const { claim, token } = await options.createClaim(id, { ...(amount === '' ? {} : { amount }), ...(expires === '' ? {} : { expires_in: expires }) });
            return showOrder(call.response, id, operator, { notice: `Claim ${claim.id} of ${claim.amount} XNO, until ${claim.expires_at}. Send the customer this link (shown once): ${options.claimUrl(token)}` });
          } catch (error) {
            if (!(error instanceof NanoPayError)) throw error;
            return showOrder(call.response, id, operator, { error: error.message });
          }
        },
        true,
      ),
    },
    {
      method: 'POST',
      path: '/dashboard/orders/:id/events/:event/resend',
      form: true,
      handle: guarded(
        'admin',
        async (call, operator) => {
          const event = await store.shop.event(call.params.event as string);
          if (event === undefined || event.data.object.id !== (call.params.id as string).toLowerCase()) throw new NanoPayError('NOT_FOUND', 'No such event of this order');
          await resendWebhook(store, event.id);
          return showOrder(call.response, event.data.object.id, operator, { notice: `Event ${event.id} is queued to be delivered again.` });
        },
        true,
      ),
    },
    {
      method: 'GET',
      path: '/dashboard/export',
      handle: guarded('read', async (call, operator) => sendPage(call.response, 200, page(frame('Export', operator, 'export'), exportContent()))),
    },
    {
      method: 'GET',
      path: '/dashboard/export/download',
      handle: guarded('read', async (call) => {
        const param = (name: string): string | undefined => call.query.get(name) || undefined;
        const query = exportQuery({ from: param('from'), to: param('to'), status: param('status') });
        const format = exportFormat(param('format'));
        const name = `orders-${param('from') ?? 'start'}-${param('to') ?? 'now'}`.replace(/[^0-9A-Za-z-]/g, '');
        const headers: Record<string, string> =
          format === 'csv'
            ? { 'content-type': 'text/csv; charset=utf-8; header=present', 'content-disposition': `attachment; filename="${name}.csv"` }
            : { 'content-type': format === 'ndjson' ? 'application/x-ndjson; charset=utf-8' : 'application/json; charset=utf-8', 'content-disposition': `attachment; filename="${name}.${format}"` };
        return sendStream(call.response, headers, exportRequests(store.shop, query, format), call.signal);
      }),
    },
    {
      method: 'GET',
      path: '/dashboard/sweeps',
      handle: guarded('read', async (call, operator) => sendPage(call.response, 200, page(frame('Sweeps', operator, 'sweeps'), sweepsContent(await store.sweeps.recent(20))))),
    },
    {
      method: 'GET',
      path: '/dashboard/health',
      handle: guarded('read', async (call, operator) => sendPage(call.response, 200, page(frame('Health', operator, 'health'), healthContent(await options.readiness?.state())))),
    },
  ];
}

/**
 * A form that changes something is sent by a page of this server: a browser says where a request comes from
 * (Origin, Sec-Fetch-Site), and anything else is refused, before the CSRF token is even looked at.
 */
function sameOrigin(call: Call, publicHost: string | undefined): void {
  const refused = new NanoPayError('FORBIDDEN', 'Forms of the dashboard are taken from its own pages only');
  const site = call.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') throw refused;
  const origin = call.headers.origin;
  if (origin === undefined) return;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw refused;
  }
  if (host !== call.headers.host && host !== publicHost) throw refused;
}
