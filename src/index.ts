/** The SDK: the stable names scripts and programs import from 'nanopay-cli'. */
export { NanoPayError, ExitCode } from './errors.js';
export {
  MAX_RAW,
  RAW_PER_XNO,
  xnoToRaw,
  rawToXno,
  deriveAccount,
  generateSeed,
  generateMnemonic,
  addressToPublicKey,
  publicKeyToAddress,
  isValidAddress,
  hashBlock,
  signBlock,
  verifyBlock,
  buildSendBlock,
  buildReceiveBlock,
  buildChangeBlock,
  workRoot,
  buildNanoUri,
  parseNanoUri,
  type Account,
  type AccountSource,
  type AccountState,
  type NanoUri,
  type StateBlock,
  type Subtype,
} from './nano/index.js';
export { workValue, validateWork, generateWork, shutdownWorkers, LIVE_THRESHOLDS, DEV_THRESHOLDS, type Thresholds } from './work/index.js';
export { NanoPay, type NanoPayOptions } from './sdk/nanopay.js';
export { nanoExactClientScheme, nanoExactServerScheme } from './x402/schemes.js';
export type { PaidFetch, PaidFetchOptions, X402Payment } from './x402/client.js';
export type { X402Quote } from './x402/quote.js';
export type { SessionFetch, SessionFetchOptions, SessionPayment, SessionShown } from './x402/sessions/buyer-book.js';
export type { ClosedSession } from './x402/sessions/buyer-close.js';
export type { SessionReceipt } from './x402/sessions/seller.js';
export { checkReceipt, type ReceiptCheck } from './x402/sessions/receipts.js';
export type { PaidToolCall, ToolPayment, ToolPayOptions } from './x402/mcp/tool-buyer.js';
export type { LanesResult, LanesSetResult, LaneShown } from './ops/lanes/lanes.js';
export type { X402Middleware, RequestPrice } from './x402/middleware.js';
export { AgentClient, AgentError } from './sdk/agent-client.js';
export { verifyWebhook, signWebhook, SIGNATURE_HEADER, type VerifyWebhookOptions } from './shop/signature.js';
export { startSandbox, type RunningSandbox, type SandboxOptions } from './sandbox/index.js';
