import type { LedgerBackend } from '../api/backend.js';
import type { StateBlock } from '../nano/index.js';
import type { Store } from '../store/store.js';
import type { SpendingPolicy } from '../wallet/config.js';
import type { Journal, JournalEntry } from '../wallet/journal.js';
import type { HistoryLog } from '../wallet/history-log.js';
import type { SendLog } from '../wallet/send-log.js';
import type { FrontEnd } from './spending/policy.js';

/** Makes proof of work for a root at a threshold. */
export type WorkProvider = (root: string, threshold: string, signal?: AbortSignal) => Promise<string>;

/** What a journal entry carries besides the block, to finish its purpose after a crash. */
export type BlockNote = Pick<JournalEntry, 'amountRaw' | 'sendId' | 'sendKind' | 'topupTransactionId' | 'profile' | 'chequeFor' | 'counterparty' | 'ownTransfer'>;

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
  /** The profile's contacts (name → address), for rules that name a contact. */
  contacts(): Promise<Record<string, string>>;
  /** The store of decisions (audit trail, spend log) and approvals; opened on first use. */
  store(): Promise<Store>;
  /** Asks the person at the terminal (the CLI on one): how a spend above an "ask above" rule gets its yes there. */
  askPerson?: (question: string) => Promise<boolean>;
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
  /** The block's signature (128 hex) by the account's key. */
  sign(block: StateBlock): Promise<string>;
}
