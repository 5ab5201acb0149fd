import { expect } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { receive } from '../../../src/ops/account/receive.js';
import { Session } from '../../../src/ops/session.js';
import { xnoToRaw } from '../../../src/nano/index.js';
import { createRemoteWallet, createWallet } from '../../../src/ops/profile/wallet.js';
import { newUser, PASSWORD, type CliUser } from '../processes/cli.js';
import { fund } from './sandbox.js';

/** The two ledger backends the sandbox speaks: its service API, and node RPC at POST / with a WebSocket. */
export type Backend = 'service' | 'node';
export const BACKENDS: Backend[] = ['service', 'node'];

export interface BackendUser {
  /** For commands run as child processes. */
  user: CliUser;
  /** The same profile in-process. */
  session: Session;
  address: string;
}

/**
 * An in-process Session configured from the environment the user's commands get
 * (config dir, API and node URLs, backend), as one more nanopay process would be.
 */
export function userSession(user: CliUser): Session {
  return new Session({ password: async () => PASSWORD, env: user.env });
}

/**
 * A user of `backend` with a wallet: made by the service (with its API key), or
 * on this machine for a node. Made in-process (no child process): wallet
 * creation is not what the tests using this are about.
 */
export async function backendUser(sb: RunningSandbox, backend: Backend): Promise<BackendUser> {
  const env = backend === 'node' ? { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, NANOPAY_NODE_WS_URL: sb.wsUrl } : {};
  const user = await newUser(sb.url, env);
  const session = userSession(user);
  const created = backend === 'node' ? await createWallet(session) : await createRemoteWallet(session);
  return { user, session, address: created.address };
}

/** A user of `backend` holding `amount` XNO, funded by the faucet and received in-process. */
export async function fundedUser(sb: RunningSandbox, backend: Backend, amount: string): Promise<BackendUser> {
  const payer = await backendUser(sb, backend);
  await fund(sb.url, payer.address, amount);
  expect((await receive(payer.session)).total_raw).toBe(xnoToRaw(amount).toString());
  return payer;
}
