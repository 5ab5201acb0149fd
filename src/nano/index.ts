export { MAX_RAW, RAW_PER_XNO, parseRaw, rawToXno, xnoToRaw } from './units.js';
export { addressToPublicKey, isValidAddress, normalizeAddress, publicKeyToAddress, type AddressPrefix } from './address.js';
export { deriveAccount, generateMnemonic, generateSeed, seedToLegacyMnemonic, type Account, type AccountSource } from './keys.js';
export {
  DEFAULT_REPRESENTATIVE,
  ZERO_HASH,
  buildChangeBlock,
  buildReceiveBlock,
  buildSendBlock,
  hashBlock,
  isStateBlock,
  linkAsAccount,
  signedByAccount,
  signBlock,
  signBlockHash,
  verifyBlock,
  workRoot,
  type AccountState,
  type LedgerBlock,
  type StateBlock,
  type Subtype,
} from './block.js';
export type { LegacyBlock } from './legacy-block.js';
export { buildNanoUri, parseNanoUri, type NanoUri } from './uri.js';
export { parseHash } from './hex.js';
