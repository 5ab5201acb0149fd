import type { Session } from '../session.js';

/**
 * Resolves once the profile's backend answers a call that costs nothing (a
 * node's version; the service's credits, which are free to read): what a
 * server's readiness asks, at most once per cache period (http/health.ts).
 */
export async function pingBackend(session: Session): Promise<void> {
  await (await session.api()).ping();
}
