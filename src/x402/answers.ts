import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir, readIfExists } from '../fs/secure-fs.js';
import { hashBlock, type StateBlock } from '../nano/index.js';
import { isObject, type SettleResponse } from './protocol.js';

/**
 * x402's `payment-identifier` extension: a buyer names its payment with an
 * id (PaymentPayload.extensions["payment-identifier"].info.id), and a retry
 * under the same id gets the first answer, with its payment response,
 * instead of paying (or being refused as paid) again.
 */
export const PAYMENT_IDENTIFIER = 'payment-identifier';

/** What a paywall states in its 402s: ids are optional, 16 to 128 of [A-Za-z0-9_-]. */
export const paymentIdentifierOffer = {
  info: { required: false },
  schema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { id: { type: 'string', minLength: 16, maxLength: 128, pattern: '^[a-zA-Z0-9_-]+$' } },
    required: ['id'],
  },
};

const ID = /^[A-Za-z0-9_-]{16,128}$/;

/** The payment id a payload carries, if it carries a well-formed one. */
export function paymentIdOf(payload: Record<string, unknown>): string | undefined {
  const extension = isObject(payload.extensions) ? payload.extensions[PAYMENT_IDENTIFIER] : undefined;
  const id = isObject(extension) && isObject(extension.info) ? extension.info.id : undefined;
  return typeof id === 'string' && ID.test(id) ? id : undefined;
}

/** The extensions of a payload naming `id`. */
export function withPaymentId(id: string): Record<string, unknown> {
  return { [PAYMENT_IDENTIFIER]: { info: { id } } };
}

/** What a payment payload presents, in one form: its block's hash, or its voucher's signature. A retry under the same id must present the same. */
export function paymentProof(payload: Record<string, unknown>): string {
  if (isObject(payload.block)) {
    try {
      return hashBlock(payload.block as unknown as StateBlock);
    } catch {
      // Not a block: compared as sent.
    }
  }
  return typeof payload.signature === 'string' ? payload.signature.toUpperCase() : createHash('sha256').update(JSON.stringify(payload)).digest('hex');
}

/** A buyer's idempotency key (--id) as a payment id: the same for every rerun of the profile, within the extension's form. */
export function paymentIdFor(profile: string, key: string): string {
  return `nanopay_${createHash('sha256').update(`${profile}\n${key}`).digest('hex').slice(0, 40)}`;
}

/** The first answer to a paid request, kept under its payment id and payer. */
export interface KeptAnswer {
  /** The request it answered (requestDigest): a retry must be the same request. */
  request: string;
  /** The payment it was paid with (paymentProof): a retry presents the same one, so an id alone gets nothing. */
  proof: string;
  status: number;
  headers: [string, string][];
  body: string;
  settlement: SettleResponse;
}

/** The largest answer kept: a bigger one is served once and not kept. */
const MAX_KEPT = 1024 * 1024;

/**
 * The answers a paywall keeps by payment id, one file each under its state
 * dir, named by a hash of the payer and the id (an id is the buyer's, so
 * another payer's same id finds nothing). Written before the answer leaves;
 * not fsynced, as the settlement record is not: a retry after a power cut is
 * answered as if the id were new, and the ledger or the session still refuse
 * to be paid twice.
 */
export class AnswerStore {
  private ready: Promise<void> | undefined;

  constructor(private readonly dir: string) {}

  private path(payer: string, id: string): string {
    return join(this.dir, `${createHash('sha256').update(`${payer}\n${id}`).digest('hex')}.json`);
  }

  async get(payer: string, id: string): Promise<KeptAnswer | undefined> {
    const text = await readIfExists(this.path(payer, id));
    return text === undefined || text === '' ? undefined : (JSON.parse(text) as KeptAnswer);
  }

  /** Keeps the first answer under (payer, id); a later one under the same key is not kept. */
  async put(payer: string, id: string, answer: KeptAnswer): Promise<void> {
    if (answer.body.length > MAX_KEPT * 2) return;
    this.ready ??= ensurePrivateDir(this.dir);
    await this.ready;
    await new Promise<void>((resolve, reject) =>
      writeFile(this.path(payer, id), JSON.stringify(answer), { flag: 'wx', mode: 0o600 }, (error) => (error === null || error.code === 'EEXIST' ? resolve() : reject(error))),
    );
  }
}
