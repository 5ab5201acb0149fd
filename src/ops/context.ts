import type { LedgerBackend } from '../api/backend.js';
import type { StateBlock } from '../nano/index.js';
import type { Store } from '../store/store.js';
import type { SpendingPolicy } from '../wallet/config.js';
import type { Journal, JournalEntry } from '../wallet/journal.js';
import type { HistoryLog } from '../wallet/history-log.js';
import type { SendLog } from '../wallet/send-log.js';
import type { FrontEnd } from './spending/policy.js';
import type { SpendAuthority, SpendRequest } from './spending/request.js';

/** Makes proof of work for a root at a threshold. */
export type WorkProvider = (root: string, threshold: string, signal?: AbortSignal) => Promise<string>;

/** What a journal entry carries besides the block, to finish its purpose after a crash. */
export type BlockNote = Pick<JournalEntry, 'thresholds' | 'amountRaw' | 'sendId' | 'sendKind' | 'topupTransactionId' | 'profile' | 'chequeFor' | 'counterparty' | 'ownTransfer'>;

/**
 * The narrow context every operation that touches the ledger runs in: the
 * remote service, proof of work, the journal and send log, the account lock,
 * the spending policy and its store, and a clock. The CLI, toolset and SDK build it from a
 * Session; tests can build it in-process.
 */
export interface OpsContext {
  /** The ledger's backend: the payment service or a node. */
  api: LedgerBackend;
  work: WorkProvider;
  journal: Journal;
  sendLog: SendLog;
  /** Every block of ours that landed, for `history`. */
  history: HistoryLog;
  /** Runs `fn` holding the account's lock (one writer per account, across processes). */
  lock<T>(address: string, fn: () => Promise<T>): Promise<T>;
  /** Which front end asked: set by the process that serves the caller, never taken from what the caller sends. */
  frontEnd: FrontEnd;
  /** The spending policy in force: the profile's, with what this process adds (stricter only). */
  policy: SpendingPolicy;
  /** The addresses of the contacts the sealed policy names (name → address), for rules that name a contact. */
  contacts(): Promise<Record<string, string>>;
  /** The store of decisions (audit trail, spend log) and approvals; opened on first use. */
  store(): Promise<Store>;
  /**
   * The key store's seal key, once the policy in force was checked against
   * its seal (POLICY_TAMPERED when it fails): spends judged in this process
   * need the key store opened with the password.
   */
  sealKey(): Promise<Buffer>;
  /** The unlocked session that judges this process's spends, when the keys are there (undefined: they are judged here). */
  authority(): Promise<SpendAuthority | undefined>;
  /**
   * Asks the person at the terminal about a held spend (the CLI on one), and
   * answers its approval: yes only with the key store password (typed there,
   * unless this process unlocked the key store with it), never a keystroke alone.
   */
  askPerson?: (question: string, approvalId: string) => Promise<boolean>;
  /** The representative a new account opens with (the profile's `representative`); the default one when unset. */
  representative?: string;
  /** Idempotency keys are scoped to the profile. */
  profile: string;
  now(): number;
  signal?: AbortSignal;
}

/**
 * An account this process can sign for. Where the key is stays behind `sign`:
 * in this process (the key store unlocked with the password), or in the
 * unlocked session, which signs on request and never hands the key out.
 */
export interface Signer {
  address: string;
  /** The block's signature (128 hex) by the account's key; `context` lets an unlocked session judge what it signs. */
  sign(block: StateBlock, context?: SignContext): Promise<string>;
  /** Which wallet account the unlocked session signs as. */
  keyRef?: { wallet: string; index: number };
}

/** What an unlocked session is told with a block, to judge it: the block before it, the spend as the caller sees it. */
export interface SignContext {
  /** The account's block the new one follows (the session reads the amount of a send from both balances). */
  previous?: StateBlock;
  spend?: SpendRequest;
  /** The block pays another account of the same wallet (a lane funded or emptied): that account's index, which the session derives. */
  own?: number;
  /** Set by the signer: the unlocked session judged and recorded the spend as it signed (the caller does not admit it again). */
  judged?: boolean;
}
