import type { LedgerBackend } from '../api/backend.js';
import { NanoPayError } from '../errors.js';
import { addressToPublicKey, hashBlock, isValidAddress, linkAsAccount, publicKeyToAddress, verifyBlock, workRoot, type StateBlock } from '../nano/index.js';
import { readAccountHead, type AccountHead } from '../ops/ledger/chain.js';
import { harderThreshold, validateWork } from '../work/index.js';
import { timed, timedNow, type PhaseClock } from './phases.js';
import { X402_ASSET, X402_SCHEME, X402_VERSION, isObject, sameRequirement, type PaymentPayload, type PaymentRequirements } from './protocol.js';

/** What verification reads of the ledger (a node's RPC, or the service). */
export type X402Ledger = Pick<LedgerBackend, 'kind' | 'accountInfo' | 'blockInfo' | 'activeDifficulty' | 'network'>;

/** A payload block checked for shape: the signed send, its hash, and who pays. */
export interface NanoCheque {
  block: Required<StateBlock>;
  hash: string;
  payer: string;
}

/** A refusal with the x402 `invalidReason` code and a message for people. */
export class X402Refusal extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const REQUIRED_KEYS = ['type', 'account', 'previous', 'representative', 'balance', 'link', 'signature', 'work'] as const;
const ALLOWED_KEYS = new Set<string>([...REQUIRED_KEYS, 'link_as_account']);
const HEX = (n: number): RegExp => new RegExp(`^[0-9a-fA-F]{${n}}$`);

/**
 * `payload.block` as every strict peer takes it: exactly the state block
 * keys (and `link_as_account`), each well formed; `link_as_account`, when
 * sent, names the same key as `link`.
 */
export function chequeOf(payload: Record<string, unknown>): NanoCheque {
  const raw = payload.block;
  if (!isObject(raw)) throw new X402Refusal('invalid_payload', 'payload.block must be a state block object');
  const extra = Object.keys(raw).filter((k) => !ALLOWED_KEYS.has(k));
  if (extra.length > 0) throw new X402Refusal('invalid_payload', `payload.block has keys a state block does not: ${extra.join(', ')}`);
  const missing = REQUIRED_KEYS.filter((k) => typeof raw[k] !== 'string');
  if (missing.length > 0) throw new X402Refusal('invalid_payload', `payload.block lacks ${missing.join(', ')} (each a string)`);
  const b = raw as Record<string, string>;
  const bad = (what: string): never => {
    throw new X402Refusal('invalid_payload', `payload.block ${what}`);
  };
  if (b.type !== 'state') bad('must be a state block');
  if (!isValidAddress(b.account as string)) bad('account is not a Nano address');
  if (!isValidAddress(b.representative as string)) bad('representative is not a Nano address');
  if (!HEX(64).test(b.previous as string)) bad('previous must be 64 hex');
  if (!HEX(64).test(b.link as string)) bad('link must be the 64-hex public key of payTo');
  if (!HEX(128).test(b.signature as string)) bad('signature must be 128 hex');
  if (!HEX(16).test(b.work as string)) bad('work must be 16 hex');
  if (!/^\d{1,39}$/.test(b.balance as string)) bad('balance must be decimal raw');
  if (b.link_as_account !== undefined && (!isValidAddress(b.link_as_account) || addressToPublicKey(b.link_as_account) !== (b.link as string).toUpperCase())) {
    throw new X402Refusal('invalid_payload', 'payload.block link_as_account does not name the key in link');
  }
  const block: Required<StateBlock> = {
    type: 'state',
    account: b.account as string,
    previous: (b.previous as string).toUpperCase(),
    representative: b.representative as string,
    balance: b.balance as string,
    link: (b.link as string).toUpperCase(),
    signature: (b.signature as string).toUpperCase(),
    work: (b.work as string).toLowerCase(),
  };
  return { block, hash: hashBlock(block), payer: publicKeyToAddress(addressToPublicKey(block.account)) };
}

/** The Nano exact requirement this server offers on `network`; extra states what work it takes. */
export function nanoRequirement(payTo: string, amountRaw: bigint, network: string, workThreshold: string, maxTimeoutSeconds = 300): PaymentRequirements {
  return {
    scheme: X402_SCHEME,
    network,
    amount: amountRaw.toString(),
    asset: X402_ASSET,
    payTo,
    maxTimeoutSeconds,
    extra: { work: 'required', workThreshold },
  };
}

/** The work threshold sends need on this ledger. */
export async function sendThreshold(ledger: X402Ledger): Promise<string> {
  return ((await ledger.activeDifficulty().catch(() => null)) ?? { send: 'fffffff800000000' }).send;
}

/**
 * Checks a payment against the requirement it claims and against the ledger,
 * in order: version, scheme and network (the one this server settles on), the echo of the requirement, the
 * block's shape, payee, signature, previous = the payer's confirmed frontier
 * (checked, see readAccountHead), the representative kept, the balance drop
 * equal to the amount, the work over previous, and the block not already in
 * the ledger. Throws an X402Refusal; anything else is the ledger failing.
 * `signed`: the payload's cheque, already found well formed and signed by the caller (checked once, not twice).
 */
export async function verifyNanoPayment(
  ledger: X402Ledger,
  payment: PaymentPayload,
  requirements: PaymentRequirements,
  network: string,
  signed?: NanoCheque,
  clock?: PhaseClock,
): Promise<NanoCheque> {
  if (payment.x402Version !== X402_VERSION) throw new X402Refusal('invalid_x402_version', 'Only x402 version 2 is supported');
  if (requirements.scheme !== X402_SCHEME || payment.accepted.scheme !== X402_SCHEME) throw new X402Refusal('unsupported_scheme', `Only the "${X402_SCHEME}" scheme is supported`);
  if (requirements.network !== network || payment.accepted.network !== network) {
    throw new X402Refusal('invalid_network', `This server settles on ${network}, not ${payment.accepted.network === network ? requirements.network : payment.accepted.network}`);
  }
  if (requirements.asset !== X402_ASSET) throw new X402Refusal('invalid_payment_requirements', `The asset must be ${X402_ASSET}`);
  if (!sameRequirement(requirements, payment.accepted)) throw new X402Refusal('invalid_payment_requirements', 'The payment does not accept the requirement it is checked against');
  if (!isValidAddress(requirements.payTo)) throw new X402Refusal('invalid_payment_requirements', 'payTo is not a Nano address');
  const amount = BigInt(requirements.amount);
  if (amount <= 0n) throw new X402Refusal('invalid_payment_requirements', 'The amount must be above 0 raw');

  const cheque = signed ?? chequeOf(payment.payload);
  const { block, hash, payer } = cheque;
  if (block.link !== addressToPublicKey(requirements.payTo)) throw new X402Refusal('invalid_recipient', `The block pays ${linkAsAccount(block.link)}, not ${requirements.payTo}`);
  if (signed === undefined && !verifyBlock(block)) throw new X402Refusal('invalid_signature', 'The block is not signed by the key of its account');

  // The block's previous is read with account info, at once (the paid request waits on both).
  const head = await timed(clock, 'head', () =>
    readAccountHead({ api: ledger as LedgerBackend }, payer, block.previous).catch((error: unknown) => {
      if (error instanceof NanoPayError && error.code === 'SERVICE_INCONSISTENT') throw new X402Refusal('invalid_frontier', error.message);
      throw error;
    }),
  );
  // Checked once the head is known: a block in the ledger is never on the head's previous (the head follows it), so
  // only a payment refused on its previous is asked about, to say why.
  if (head.state.frontier !== block.previous && (await inLedger(ledger, hash))) throw new X402Refusal('transaction_already_settled', `The block ${hash} is already in the ledger`);
  if (head.state.frontier === null) throw new X402Refusal('insufficient_funds', `${payer} has no block on the ledger`);
  if (head.state.frontier !== block.previous) {
    throw new X402Refusal('frontier_mismatch', `The block builds on ${block.previous}, but the frontier of ${payer} is ${head.state.frontier}`);
  }
  return timedNow(clock, 'checks', () => checkAgainstHead(cheque, head, amount, requirements));
}

/** Whether the ledger holds block `hash`. */
function inLedger(ledger: X402Ledger, hash: string): Promise<boolean> {
  return ledger.blockInfo(hash).then(
    () => true,
    (error: unknown) => {
      if (error instanceof NanoPayError && error.status === 404) return false;
      throw error;
    },
  );
}

/** What a payment built on the head must keep: its confirmed frontier, its representative, the amount to the raw, work over previous. */
function checkAgainstHead(cheque: NanoCheque, head: AccountHead, amount: bigint, requirements: PaymentRequirements): NanoCheque {
  const { block, payer } = cheque;
  if (!head.confirmed) throw new X402Refusal('frontier_unconfirmed', `The frontier ${head.state.frontier} of ${payer} is not confirmed yet`);
  if (addressToPublicKey(block.representative) !== addressToPublicKey(head.state.representative)) {
    throw new X402Refusal('invalid_payload', 'The block changes the representative; a payment must keep it');
  }
  const drop = head.state.balance - BigInt(block.balance);
  if (drop !== amount) throw new X402Refusal('invalid_amount', `The block sends ${drop} raw; the requirement is exactly ${amount} raw`);

  const stated = requirements.extra?.workThreshold;
  const threshold = typeof stated === 'string' && HEX(16).test(stated) ? harderThreshold(head.thresholds.send, stated) : head.thresholds.send;
  if (!validateWork(workRoot(block), block.work, threshold)) throw new X402Refusal('insufficient_work', `The work does not meet ${threshold} over ${block.previous}`);
  return cheque;
}
