export { ApiClient, CREDIT_TIERS } from './client.js';
export type {
  CreditTier,
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
