import { checkRedirectUrl } from '../api/contract.js';
import { renderMessagePage } from '../checkout/page.js';
import { checkoutPath, checkoutRoutes, sendHtml } from '../checkout/routes.js';
import { CheckoutWatcher } from '../checkout/watcher.js';
import { NanoPayError } from '../errors.js';
import { RESPONDED, type Call, type Route } from '../http/server.js';
import { buildNanoUri, xnoToRaw } from '../nano/index.js';
import { CREDIT_COSTS } from './pricing.js';
import type { SandboxService } from './service.js';

/**
 * The service's planned hosted page, made real in the sandbox:
 * GET /payment/create/<receive_address>/<API_KEY>?amount=1.5[&redirect_url=…]
 * creates the request and redirects to its checkout page (the same page as
 * `nanopay checkout`). The key is in the URL, so the customer's browser sees it.
 */
export function sandboxCheckout(service: SandboxService, save: () => Promise<void>): { routes: Route[]; close(): void } {
  // The sandbox reads its own memory: a quick interval costs nothing.
  const watcher = new CheckoutWatcher({
    read: async (id) => {
      const status = service.paymentStatus(id);
      return status.is_paid === 'true' ? { state: 'paid', ...(status.block_hash === undefined ? {} : { block_hash: status.block_hash }) } : { state: 'waiting' };
    },
    intervalMs: 250,
    viewGraceMs: 15_000,
  });
  watcher.start();

  const create = async ({ params, query, response }: Call): Promise<typeof RESPONDED> => {
    try {
      const apiKey = service.authenticate(params.api_key);
      const cost = CREDIT_COSTS.paymentRequest;
      service.requireCredits(apiKey, cost);
      const amount = query.get('amount');
      if (amount === null) throw new NanoPayError('USAGE', 'Add the amount to the link: ?amount=1.5 (in XNO)');
      const redirectUrl = query.get('redirect_url') ?? undefined;
      checkRedirectUrl(redirectUrl);
      const created = service.paymentRequest(params.receive_address as string, amount, redirectUrl ?? '');
      service.charge(apiKey, cost);
      await save();
      const amountRaw = xnoToRaw(created.amount as string);
      const request = {
        transaction_id: created.transaction_id as string,
        receive_address: created.receive_address as string,
        amount: created.amount as string,
        amount_raw: amountRaw.toString(),
        uri: buildNanoUri({ address: created.receive_address as string, amountRaw }),
        ...(redirectUrl === undefined ? {} : { redirect_url: redirectUrl }),
      };
      watcher.add(request, { state: 'waiting' });
      response.writeHead(303, { location: checkoutPath(request.transaction_id), 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'content-length': 0 });
      response.end();
      return RESPONDED;
    } catch (error) {
      if (!(error instanceof NanoPayError)) throw error;
      return sendHtml(response, error.status, renderMessagePage('This payment link does not work', `${error.message} [${error.code}]`));
    }
  };

  return {
    routes: [{ method: 'GET', path: '/payment/create/:receive_address/:api_key', secretParams: ['api_key'], handle: create }, ...checkoutRoutes(watcher, { testMode: true })],
    close: () => watcher.stop(),
  };
}
