import { randomBytes, randomUUID } from 'node:crypto';
import { publicKeyToAddress, rawToXno } from '../../../src/nano/index.js';
import type { ShopRequest } from '../../../src/store/shop.js';
import type { Store } from '../../../src/store/store.js';

/**
 * `count` open shop requests on fresh addresses, written to the store as checkout serve --fresh-addresses
 * keeps them (the shop's row and the payment request nanopay keeps, in one transaction each), without
 * the work of making them: their addresses are random accounts no wallet derives (a status read needs
 * no key). Faster than the API when a test or bench needs thousands open.
 */
export async function openFreshRequests(store: Store, count: number, options: { amountRaw?: bigint; expiresInS?: number; wallet?: string } = {}): Promise<ShopRequest[]> {
  const raw = options.amountRaw ?? 10n ** 30n;
  const amountRaw = raw.toString();
  const wallet = options.wallet ?? `bench-${randomUUID()}`;
  const created = new Date();
  const expires = new Date(created.getTime() + (options.expiresInS ?? 86_400) * 1000).toISOString();
  const made: ShopRequest[] = [];
  for (let i = 0; i < count; i++) {
    const address = publicKeyToAddress(randomBytes(32));
    const id = randomUUID();
    const request: ShopRequest = {
      id,
      status: 'waiting',
      currency: 'XNO',
      amount: rawToXno(raw),
      amount_raw: amountRaw,
      receive_address: address,
      uri: `nano:${address}?amount=${amountRaw}`,
      created_at: created.toISOString(),
      expires_at: expires,
      events: 0,
    };
    await store.shop.create(request, undefined, { id, address, baseRaw: amountRaw, amountRaw, createdAt: request.created_at, expiresAt: expires, fresh: { wallet, index: i + 1 } });
    made.push(request);
  }
  return made;
}
