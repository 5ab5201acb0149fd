import { NanoPayError } from '../errors.js';
import type { StateBlock, Subtype } from '../nano/block.js';
import type {
  RemoteAccountInfo,
  RemoteBalance,
  RemoteBlockInfo,
  RemoteCredits,
  RemoteDifficulty,
  RemotePaymentRequest,
  RemotePaymentStatus,
  RemoteTopupOffer,
} from './client.js';
import type { CreditTier } from './contract.js';

export type BackendKind = 'service' | 'node';

/**
 * What operations need from the ledger's side: the service's Protected API
 * (ApiClient) or a Nano node's RPC (NodeClient). Every answer is untrusted:
 * ops check what they build on (ops/chain.ts) whichever backend answered.
 */
export interface LedgerBackend {
  readonly kind: BackendKind;
  balance(address: string): Promise<RemoteBalance>;
  /** Hashes of blocks waiting to be received by `address`. */
  pending(address: string): Promise<string[]>;
  /** null for an account that has no block yet. */
  accountInfo(address: string): Promise<RemoteAccountInfo | null>;
  /** Hash-verifiable contents (with signature) and the successor, for the frontier check. */
  blockInfo(hash: string): Promise<RemoteBlockInfo>;
  publish(signed: StateBlock, subtype: Subtype, hash: string): Promise<void>;
  /** The thresholds to build with, or null when the backend does not say. */
  activeDifficulty(): Promise<RemoteDifficulty | null>;
  /**
   * The Nano network the backend settles on, as a node's `version` names it
   * ("live", "beta", "test", "dev"), or null when it does not say.
   */
  network(): Promise<string | null>;
  /** Resolves once the backend answers a call that costs nothing (a server's readiness): never cached. */
  ping(): Promise<void>;
  // The service's own business: a node backend answers SERVICE_ONLY.
  paymentRequest(input: { receiveAddress: string; amount: string; redirectUrl?: string }): Promise<RemotePaymentRequest>;
  paymentStatus(transactionId: string): Promise<RemotePaymentStatus>;
  credits(): Promise<RemoteCredits>;
  topupOffer(tier: CreditTier): Promise<RemoteTopupOffer>;
  topupSubmit(signed: StateBlock, transactionId: string): Promise<{ toppedUp: number; newBalance: number }>;
  donationAddress(): Promise<string>;
}

/** What only the payment service offers, asked of a node backend. */
export function serviceOnly(what: string): NanoPayError {
  return new NanoPayError('SERVICE_ONLY', `${what}: only the payment service offers this, and this profile talks to a Nano node (backend = node)`, {
    hint: 'Switch with: nanopay config set backend service (or NANOPAY_BACKEND=service).',
  });
}
