import type { Paywall, PricedRoute } from './paywall.js';
import { X402_VERSION, type PaymentRequirements } from './protocol.js';

/**
 * What a paywall sells, as `GET /.well-known/x402` (and `/.well-known/x402.json`)
 * answers it: the per-origin discovery manifest of the x402 draft
 * (specs/extensions/well-known-discovery.md in the x402 repository): one item
 * per route, in the order they are matched (the first match wins), then the
 * price of every other request. `accepts` is what the route's 402 states
 * (amount in raw, payee, network); an empty `accepts` is a free route. It is
 * advisory: the live 402 decides.
 */
export interface DiscoveryManifest {
  x402Version: typeof X402_VERSION;
  /** When the paywall started (Unix seconds): the routes are its flags. */
  lastUpdated: number;
  items: DiscoveryItem[];
}

export interface DiscoveryItem {
  /** The route's URL at this origin; a trailing `*` matches any rest of the path. */
  resource: { url: string; description?: string };
  type: 'http';
  accepts: PaymentRequirements[];
  /** How to call it: the method (`*` for any) and the path as the route names it. */
  input: { method: string; routeTemplate: string };
}

/** The manifest for `origin` (scheme, host and port the client used). */
export async function discoveryManifest(origin: string, paywall: Paywall, routes: readonly PricedRoute[], defaultRaw: bigint, lastUpdated: number, description?: string): Promise<DiscoveryManifest> {
  const item = async (method: string, path: string, priceRaw: bigint): Promise<DiscoveryItem> => ({
    resource: { url: `${origin}${path}`, ...(description === undefined ? {} : { description }) },
    type: 'http',
    accepts: priceRaw === 0n ? [] : [await paywall.requirementFor(priceRaw)],
    input: { method, routeTemplate: path },
  });
  const items = await Promise.all([...routes.map((r) => item(r.method, r.path, r.priceRaw)), item('*', '/*', defaultRaw)]);
  return { x402Version: X402_VERSION, lastUpdated, items };
}
