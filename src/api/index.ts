export { ApiClient } from './client.js';
export { CREDIT_TIERS, isTransactionId, parseTier, type CreditTier } from './contract.js';
export type {
  RemoteAccountInfo,
  RemoteBalance,
  RemoteBlockInfo,
  RemoteCredits,
  RemoteDifficulty,
  RemotePaymentRequest,
  RemotePaymentStatus,
  RemoteTopupOffer,
  RemoteWallet,
} from './client.js';
export type { HttpOptions } from './http.js';
