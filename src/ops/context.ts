import type { ApiClient } from '../api/client.js';
import type { StateBlock, Subtype } from '../nano/block.js';
import type { JournalEntry } from '../wallet/journal.js';

/** Makes proof of work for a root at a threshold. */
export type WorkProvider = (root: string, threshold: string, signal?: AbortSignal) => Promise<string>;

/** Where signed blocks are recorded before they are published. */
export interface BlockJournal {
  record(address: string, entry: JournalEntry): Promise<void>;
  clear(address: string): Promise<void>;
}

/** What a journal entry carries besides the block, to finish its purpose after a crash. */
export type BlockNote = Pick<JournalEntry, 'amountRaw' | 'sendId' | 'topupTransactionId'>;

/** What every operation needs: the remote service and a way to make work. */
export interface OpsContext {
  api: ApiClient;
  work: WorkProvider;
  journal?: BlockJournal;
  /** How a signed block reaches the ledger; the API's publish unless a flow submits it otherwise (top-up). */
  publish?: (block: StateBlock, subtype: Subtype, hash: string) => Promise<void>;
  signal?: AbortSignal;
}

/** An account this process can sign for. */
export interface Signer {
  address: string;
  privateKey: string;
}
