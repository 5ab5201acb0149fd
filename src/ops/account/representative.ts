import { NanoPayError } from '../../errors.js';
import { buildChangeBlock, normalizeAddress } from '../../nano/index.js';
import { publishEntry, readAccountHead, signAndJournal } from '../ledger/chain.js';
import { recordLanded } from '../ledger/landed.js';
import { settleJournal } from '../ledger/recovery.js';
import type { Session } from '../session.js';

export interface RepresentativeShown {
  account: string;
  /** The representative in the account's verified head block; null for an account not opened yet. */
  representative: string | null;
  opened: boolean;
  /** The profile's setting: what a new account opens with. */
  configured: string;
}

/** The representative of an account of yours (or any address), read from its verified head block, beside the profile's setting. */
export async function showRepresentative(session: Session, input: { address?: string; wallet?: string; index?: number; signal?: AbortSignal } = {}): Promise<RepresentativeShown> {
  const account = input.address === undefined ? await session.address(input.wallet, input.index) : normalizeAddress(input.address);
  const ctx = await session.context(input.signal);
  const head = await readAccountHead(ctx, account);
  const opened = head.state.frontier !== null;
  return { account, representative: opened ? normalizeAddress(head.state.representative) : null, opened, configured: session.representative() };
}

/** What a change will do, shown before it is confirmed. */
export interface ChangePreview {
  account: string;
  from: string;
  to: string;
}

export interface RepresentativeInput {
  /** The new representative; the profile's setting when not given. */
  representative?: string;
  wallet?: string;
  index?: number;
  /** Asked once the current representative is known; false cancels. */
  confirm?: (preview: ChangePreview) => Promise<boolean>;
  signal?: AbortSignal;
}

export interface RepresentativeChanged {
  account: string;
  representative: string;
  previous_representative: string;
  /** The change block; null when the account already had this representative (nothing was signed). */
  hash: string | null;
  changed: boolean;
}

/**
 * Publishes a change block that moves the account's representative. Like a
 * send it holds the account lock, settles any earlier journaled block first,
 * builds on the verified head read again under the lock, and journals the
 * signed block before it leaves, so a crash republishes this very block.
 */
export async function setRepresentative(session: Session, input: RepresentativeInput = {}): Promise<RepresentativeChanged> {
  const representative = normalizeAddress(input.representative ?? session.representative());
  const ctx = await session.context(input.signal);
  const signer = await session.account(input.wallet, input.index);
  const first = await readAccountHead(ctx, signer.address);
  if (first.state.frontier === null) {
    throw new NanoPayError('ACCOUNT_NOT_FOUND', `The account ${signer.address} has no block yet, so there is no representative to change`, {
      hint: 'Its first receive opens it with the profile\'s representative (nanopay config set representative …).',
    });
  }
  const unchanged = (previous: string): RepresentativeChanged => ({ account: signer.address, representative, previous_representative: previous, hash: null, changed: false });
  const current = normalizeAddress(first.state.representative);
  if (current === representative) return unchanged(representative);
  if (input.confirm !== undefined && !(await input.confirm({ account: signer.address, from: current, to: representative }))) {
    throw new NanoPayError('CANCELLED', 'Cancelled; nothing was signed');
  }
  return ctx.lock(signer.address, async () => {
    await settleJournal(ctx, signer.address);
    // The head may have moved while the user confirmed: build on the fresh one.
    const head = await readAccountHead(ctx, signer.address);
    if (normalizeAddress(head.state.representative) === representative) return unchanged(representative);
    const entry = await signAndJournal(ctx, signer, buildChangeBlock(head.state, { representative }), 'change', head.thresholds, {}, undefined, head.block === undefined ? {} : { previous: head.block });
    await publishEntry(ctx, entry);
    await recordLanded(ctx, entry);
    await ctx.journal.clear(signer.address);
    return { account: signer.address, representative, previous_representative: normalizeAddress(head.state.representative), hash: entry.hash, changed: true };
  });
}
