/**
 * One error type for the whole product. Every failure a user, script or program
 * can see carries a stable `code`; front ends map it to an HTTP status (toolset)
 * or a process exit code (CLI) through the catalog below.
 */

/** Process exit codes of the CLI. Stable: scripts rely on them (docs/reference.md lists them). */
export const ExitCode = {
  OK: 0,
  GENERAL: 1,
  USAGE: 2,
  INVALID_INPUT: 3,
  INSUFFICIENT_FUNDS: 4,
  UPSTREAM: 5,
  AUTH: 6,
  LIMIT: 7,
  TIMEOUT: 8,
  NOT_FOUND: 9,
  CONFLICT: 10,
  EXPIRED: 11,
  DECLINED: 12,
  ENVIRONMENT: 13,
  APPROVAL: 14,
  INTERRUPTED: 130,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

interface CodeInfo {
  status: number;
  exit: ExitCodeValue;
  /** What to do next, for every error of the code that names nothing better (one built from the service's answer too). */
  hint?: string;
}

/** A key out of credits is fixed by a top-up, which itself costs no credits (ops/spending/credits.ts pays it with free calls). */
const TOP_UP_HINT =
  'Buy credits with: nanopay credits topup 1000 (the top-up itself needs no credits; nanopay credits lists the tiers and their prices). Agents: the credits_topup tool (POST /credits/topup/1000 on nanopay serve).';

const invalid: CodeInfo = { status: 400, exit: ExitCode.INVALID_INPUT };
const upstream: CodeInfo = { status: 502, exit: ExitCode.UPSTREAM };
const auth: CodeInfo = { status: 401, exit: ExitCode.AUTH };
const conflict: CodeInfo = { status: 409, exit: ExitCode.CONFLICT };

/** Known codes: the spec's catalog, the upstream pass-through codes, and our own. */
const CATALOG: Record<string, CodeInfo> = {
  // Caller input (spec catalog and amount variants).
  INVALID_ADDRESS: invalid,
  INVALID_NUMBER_FORMAT: invalid,
  INVALID_NEGATIVE_AMOUNT: invalid,
  TOO_MANY_DECIMAL_PLACES: invalid,
  INVALID_FRACTIONAL_PART: invalid,
  INVALID_WHOLE_NUMBER: invalid,
  AMOUNT_TOO_LARGE: invalid,
  INVALID_CREDITS_AMOUNT: invalid,
  INVALID_HEX: invalid,
  INVALID_SEED: invalid,
  INVALID_MNEMONIC: invalid,
  INVALID_PRIVATE_KEY: invalid,
  INVALID_URI: invalid,
  INVALID_BLOCK: invalid,
  INVALID_REQUEST: invalid,
  INVALID_JSON: invalid,
  USAGE: { status: 400, exit: ExitCode.USAGE },
  INVALID_TRANSACTION_ID: { status: 404, exit: ExitCode.NOT_FOUND },
  NOT_FOUND: { status: 404, exit: ExitCode.NOT_FOUND },
  ACCOUNT_NOT_FOUND: { status: 404, exit: ExitCode.NOT_FOUND },
  BLOCK_NOT_FOUND: { status: 404, exit: ExitCode.NOT_FOUND },
  PAYLOAD_TOO_LARGE: { status: 413, exit: ExitCode.INVALID_INPUT },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, exit: ExitCode.INVALID_INPUT },
  // Money.
  INSUFFICIENT_FUNDS: { status: 402, exit: ExitCode.INSUFFICIENT_FUNDS },
  INSUFFICIENT_CREDITS: { status: 402, exit: ExitCode.INSUFFICIENT_FUNDS, hint: TOP_UP_HINT },
  LIMIT_EXCEEDED: { status: 403, exit: ExitCode.LIMIT },
  // The spending policy refused a spend: the message names the rule and what room it leaves.
  POLICY_DENIED: { status: 403, exit: ExitCode.LIMIT },
  // A spend above an "ask above" rule, held as a pending approval (its id in the error's details) until a person says yes.
  APPROVAL_REQUIRED: { status: 428, exit: ExitCode.APPROVAL },
  // An approval id that cannot pay this spend: unknown, denied, expired, used, or bound to another spend.
  APPROVAL_INVALID: conflict,
  // The spending policy was changed by other means than nanopay with the key store password (its seal fails): every spend is refused until a person reseals it.
  POLICY_TAMPERED: { status: 403, exit: ExitCode.LIMIT },
  // Ledger rejections (sandbox and node): the block conflicts with the ledger.
  BLOCK_FORK: conflict,
  BLOCK_EXISTS: conflict,
  BLOCK_GAP_PREVIOUS: conflict,
  BLOCK_GAP_SOURCE: conflict,
  BLOCK_ALREADY_RECEIVED: conflict,
  BLOCK_UNRECEIVABLE: conflict,
  BLOCK_BAD_SIGNATURE: invalid,
  BLOCK_INSUFFICIENT_WORK: invalid,
  BLOCK_BALANCE_MISMATCH: invalid,
  BLOCK_NEGATIVE_SPEND: invalid,
  BLOCK_ACCOUNT_MISMATCH: invalid,
  PAYMENT_MISMATCH: invalid,
  CONFLICT: conflict,
  ACCOUNT_BUSY: conflict,
  STORE_BUSY: conflict,
  // A change of store (database-url, store migrate) that would leave data behind, or copy into a store that holds some.
  STORE_NOT_EMPTY: conflict,
  // The profile's store was switched (store migrate) after this process opened it: nothing is written to the old one.
  STORE_MOVED: conflict,
  IDEMPOTENCY_MISMATCH: conflict,
  // An x402 payment handed to a server and not yet resolved (seen on the ledger, or cancelled).
  CHEQUE_OUTSTANDING: conflict,
  // An x402 payment made before under this idempotency key is confirmed, and the server does not serve the request for it again.
  X402_PAID_NOT_SERVED: conflict,
  // Every payment lane of the wallet stayed busy (an outstanding cheque each, or held by other payments) for the whole wait.
  LANES_BUSY: conflict,
  // x402: no acceptable Nano requirement, or over the maximum (or no maximum set).
  X402_UNPAYABLE: { status: 402, exit: ExitCode.LIMIT },
  // A contact added again with another address, not confirmed: where @NAME pays would change.
  CONTACT_CHANGED: conflict,
  INVALID_CONTACT_NAME: invalid,
  // A command of the payment service asked of a node backend (credits, top-up, the donation address).
  SERVICE_ONLY: { status: 400, exit: ExitCode.USAGE },
  // Auth and the local store.
  MISSING_API_KEY: auth,
  INVALID_API_KEY: auth,
  API_KEY_NOT_FOUND: auth,
  FORBIDDEN: { status: 403, exit: ExitCode.AUTH },
  UNAUTHORIZED: auth,
  // Too many failed sign-ins to the dashboard for a name or from an address: wait (operator-sessions.ts).
  SIGN_IN_THROTTLED: { status: 429, exit: ExitCode.AUTH },
  // A webhook whose Nanopay-Signature does not verify (verifyWebhook): tampered, replayed, or another secret.
  WEBHOOK_SIGNATURE_INVALID: auth,
  WRONG_PASSWORD: auth,
  PASSWORD_REQUIRED: auth,
  PASSWORD_TOO_SHORT: auth,
  STORE_CORRUPT: { status: 500, exit: ExitCode.GENERAL },
  // The requests store (src/store/): its schema is newer than this nanopay; its PostgreSQL server cannot be reached.
  STORE_TOO_NEW: { status: 500, exit: ExitCode.GENERAL },
  STORE_UNAVAILABLE: { status: 503, exit: ExitCode.UPSTREAM },
  // A server's /readyz: its store or backend does not answer, or it is draining (src/http/health.ts).
  NOT_READY: { status: 503, exit: ExitCode.UPSTREAM },
  // The PostgreSQL server answered but refused the store's connection: wrong or missing password, no such user or database.
  STORE_REFUSED: { status: 503, exit: ExitCode.AUTH },
  // An unlocked session's socket or dir that is not the user's own and private: refused, never used.
  UNSAFE_SESSION: { status: 500, exit: ExitCode.GENERAL },
  // Another process traces this one (ptrace: a debugger, strace): no secret is read under it.
  UNSAFE_PROCESS: { status: 500, exit: ExitCode.GENERAL },
  // A wallet the running unlocked session does not hold (the settings name one it was not unlocked with).
  NOT_IN_SESSION: conflict,
  // A private directory of another user, or a file of secrets (password, token) others could read or change: refused, never used.
  UNSAFE_PATH: { status: 500, exit: ExitCode.GENERAL },
  // The strict agent already unlocks its key store for as many requests as it lets wait: try again in a moment.
  AGENT_BUSY: { status: 503, exit: ExitCode.CONFLICT },
  // Upstream and transport.
  REQUEST_ERROR: upstream,
  // A proxy that wants credentials (407): none were given, or not the right ones.
  PROXY_AUTH_REQUIRED: { status: 502, exit: ExitCode.AUTH },
  // An answer larger than nanopay reads (an x402 server's headers past Node's 16 KB).
  ANSWER_TOO_LARGE: upstream,
  PARSE_ERROR: upstream,
  INVALID_DATA: upstream,
  WORK_SERVER_ERROR: upstream,
  SERVICE_INCONSISTENT: upstream,
  // A legacy block whose balance would take walking more of its chain than a proof may read (ops/ledger/proofs.ts).
  UNSUPPORTED_BLOCK: upstream,
  RATE_LIMIT_EXCEEDED: { status: 429, exit: ExitCode.UPSTREAM },
  TRANSACTION_CREATION_FAILED: upstream,
  PRICE_CALCULATION_ERROR: upstream,
  TRANSACTION_NOT_CONFIRMED: upstream,
  NO_TRANSACTION_FOUND: { status: 404, exit: ExitCode.NOT_FOUND },
  // x402: the server took the payment but its settlement could not be verified on our ledger; the cheque stays outstanding.
  X402_UNSETTLED: upstream,
  // The rate source of a price in the shop's currency (ops/pricing): no answer or no usable rate, a rate too old,
  // or one that moved more than rate-max-move from the last accepted. No request is made.
  RATE_UNAVAILABLE: upstream,
  RATE_STALE: upstream,
  RATE_MOVED: upstream,
  // Time and interruption.
  TIMEOUT: { status: 504, exit: ExitCode.TIMEOUT },
  // A payment request whose time ran out unpaid (status --watch stops there): 410 Gone.
  REQUEST_EXPIRED: { status: 410, exit: ExitCode.EXPIRED },
  CANCELLED: { status: 499, exit: ExitCode.INTERRUPTED },
  // The user answered no to a confirmation: nothing was done, and it is not an interruption (130).
  DECLINED: { status: 409, exit: ExitCode.DECLINED },
  // The machine: the disk nanopay writes to is full.
  DISK_FULL: { status: 507, exit: ExitCode.ENVIRONMENT },
  // The machine: a file or dir nanopay must write is on a read-only disk, or this user may not write it.
  NOT_WRITABLE: { status: 500, exit: ExitCode.ENVIRONMENT },
  // The machine: a Node.js older than engines (22). bin/run.js refuses it before loading anything, with this exit code.
  UNSUPPORTED_NODE: { status: 500, exit: ExitCode.ENVIRONMENT },
  // Refunds: of a request nothing was received for; of more than it received (less what went back already).
  REQUEST_NOT_PAID: conflict,
  REFUND_TOO_LARGE: conflict,
  // Refunds: a request paid from several accounts, and no destination named (the choices are listed).
  PAYER_AMBIGUOUS: { status: 400, exit: ExitCode.USAGE },
  // Refunds through the shop's API go only to an account that paid the request.
  REFUND_NOT_TO_PAYER: { status: 403, exit: ExitCode.AUTH },
  // Our own bugs.
  INTERNAL_ERROR: { status: 500, exit: ExitCode.GENERAL },
};

/** Every known code with its HTTP status and exit code, in the catalog's order (docs/reference.md lists them by exit code). */
export function errorCatalog(): { code: string; status: number; exit: ExitCodeValue }[] {
  return Object.entries(CATALOG).map(([code, { status, exit }]) => ({ code, status, exit }));
}

export interface NanoPayErrorOptions {
  hint?: string;
  /** Facts a program acts on (a policy refusal's rule and room, an approval's id), shown beside code and message. */
  details?: Record<string, unknown>;
  status?: number;
  exitCode?: ExitCodeValue;
  cause?: unknown;
}

export class NanoPayError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly status: number;
  readonly exitCode: ExitCodeValue;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: string, message: string, options: NanoPayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NanoPayError';
    this.code = code;
    // Unknown codes come from upstream pass-through: treat them as upstream failures.
    const info = CATALOG[code] ?? upstream;
    this.hint = options.hint ?? info.hint;
    this.status = options.status ?? info.status;
    this.exitCode = options.exitCode ?? info.exit;
    this.details = options.details;
  }

  toJSON(): { code: string; message: string; hint?: string } & Record<string, unknown> {
    return { code: this.code, message: this.message, ...(this.hint === undefined ? {} : { hint: this.hint }), ...this.details };
  }
}

/** The disk is full; `where` names the file or dir when it is known. */
export function diskFull(where: string | undefined, cause: unknown): NanoPayError {
  return new NanoPayError('DISK_FULL', `The disk is full${where === undefined ? '' : `: nanopay could not write ${where}`}; nothing more was written`, {
    hint: 'Free some space on that disk, then run the command again.',
    cause,
  });
}

/** A file or dir nanopay must write is read-only (`readOnly`), or this user may not use it. */
export function notWritable(where: string | undefined, readOnly: boolean, cause: unknown): NanoPayError {
  const what = where ?? 'a file of its config dir';
  const said = readOnly ? `cannot write ${what}: the file system is read-only` : `is not allowed to use ${what} (permission denied)`;
  return new NanoPayError('NOT_WRITABLE', `nanopay ${said}; nothing was changed`, {
    hint: 'Commands that only read (balance, status, history) still run. To change anything, make the config dir writable, or set NANOPAY_CONFIG_DIR to a writable one.',
    cause,
  });
}

/** What the machine refused, by the codes Node gives it: the user can act on it, so it is not a bug. */
function machineFailure(value: unknown): NanoPayError | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { code, path } = value as { code?: unknown; path?: unknown };
  const where = typeof path === 'string' ? path : undefined;
  if (code === 'ENOSPC' || code === 'EDQUOT') return diskFull(where, value);
  if (code === 'EROFS') return notWritable(where, true, value);
  // With a path only: the same codes come from kill() and listen(), which are not files.
  if ((code === 'EACCES' || code === 'EPERM') && where !== undefined) return notWritable(where, false, value);
  return undefined;
}

/** Wraps anything thrown into a NanoPayError; what the machine refused is coded, other unknown throwables are our bugs. */
export function toNanoPayError(value: unknown): NanoPayError {
  if (value instanceof NanoPayError) return value;
  const machine = machineFailure(value);
  if (machine !== undefined) return machine;
  const message = value instanceof Error ? value.message : String(value);
  return new NanoPayError('INTERNAL_ERROR', message, { cause: value });
}

/** Text for a message with every URL's credentials (http://user:pass@host) replaced by "***". */
export function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/gi, '$1***@');
}
