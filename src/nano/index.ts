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
  linkAsAccount,
  signBlock,
  signBlockHash,
  verifyBlock,
  workRoot,
  type AccountState,
  type StateBlock,
  type Subtype,
} from './block.js';
export { buildNanoUri, parseNanoUri, type NanoUri } from './uri.js';
export { parseHash } from './hex.js';
