import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_REPRESENTATIVE,
  buildReceiveBlock,
  buildSendBlock,
  deriveAccount,
  generateSeed,
  hashBlock,
  signBlock,
  type Account,
  type StateBlock,
} from '../../../src/nano/index.js';
import type { OpsContext } from '../../../src/ops/context.js';
import { recordedHead } from '../../../src/ops/ledger/recorded-head.js';
import { recordLanded } from '../../../src/ops/ledger/landed.js';
import { DEV_THRESHOLDS, LIVE_THRESHOLDS } from '../../../src/work/index.js';
import { HistoryLog } from '../../../src/wallet/history-log.js';
import type { JournalEntry } from '../../../src/wallet/journal.js';

/**
 * The head a top-up at 0 credits builds on, read from the profile's history:
 * the account's newest block there, used only when it is whole and checks out
 * as a head from the ledger would (its hash, its account, its signature).
 */
let root: string;
let count = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'nanopay-recorded-head-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** What the operations need of a context to record a landed receive and read a head: the history and the profile. */
function context(): Pick<OpsContext, 'history' | 'profile'> {
  return { history: new HistoryLog(join(root, `history-${count++}`)), profile: 'default' };
}

const newAccount = (): Account => deriveAccount({ seed: generateSeed(), index: 0 });

function entryOf(block: StateBlock, subtype: JournalEntry['subtype'], key: Account, extra: Partial<JournalEntry> = {}): JournalEntry {
  const signed = { ...block, signature: signBlock(block, key), work: '0123456789abcdef' };
  return { hash: hashBlock(signed), subtype, block: signed, createdAt: new Date().toISOString(), thresholds: DEV_THRESHOLDS, amountRaw: '1000', ...extra };
}

/** An account opened with 1000 raw and a send of 300 from it, both recorded as landed. */
async function openedAndSent(ctx: Pick<OpsContext, 'history' | 'profile'>, account: Account): Promise<JournalEntry> {
  const open = entryOf(buildReceiveBlock({ address: account.address, frontier: null, balance: 0n, representative: DEFAULT_REPRESENTATIVE }, { sourceHash: 'AB'.repeat(32), amount: 1000n }), 'open', account);
  await recordLanded(ctx as OpsContext, open);
  const send = entryOf(buildSendBlock({ address: account.address, frontier: open.hash, balance: 1000n, representative: DEFAULT_REPRESENTATIVE }, { to: newAccount().address, amount: 300n }), 'send', account);
  // A receive's landing records only its line; a send's also its spend, which is not what this is about.
  await recordLanded(ctx as OpsContext, { ...send, subtype: 'receive' });
  return send;
}

describe('recordedHead', () => {
  it("is the account's newest landed block, with the thresholds it was made for; other accounts' lines are passed over", async () => {
    const ctx = context();
    const account = newAccount();
    const send = await openedAndSent(ctx, account);
    const other = newAccount();
    await openedAndSent(ctx, other);
    expect(await recordedHead(ctx, account.address)).toEqual({
      state: { address: account.address, frontier: send.hash, balance: 700n, representative: DEFAULT_REPRESENTATIVE },
      block: send.block,
      thresholds: DEV_THRESHOLDS,
      confirmed: false,
    });
    expect(await recordedHead(ctx, newAccount().address)).toBeUndefined();
  });

  it('a line without the thresholds (made without them) builds at the live ones', async () => {
    const ctx = context();
    const account = newAccount();
    const { thresholds: _dropped, ...open } = entryOf(buildReceiveBlock({ address: account.address, frontier: null, balance: 0n, representative: DEFAULT_REPRESENTATIVE }, { sourceHash: 'CD'.repeat(32), amount: 5n }), 'open', account);
    await recordLanded(ctx as OpsContext, open);
    expect((await recordedHead(ctx, account.address))?.thresholds).toEqual(LIVE_THRESHOLDS);
  });

  it('is none when the newest line is not the whole block (a version before), though an older one is', async () => {
    const ctx = context();
    const account = newAccount();
    const send = await openedAndSent(ctx, account);
    await ctx.history.append(ctx.profile, { hash: 'EF'.repeat(32), account: account.address, subtype: 'receive', amountRaw: '1', balanceRaw: '701', representative: DEFAULT_REPRESENTATIVE, at: send.createdAt });
    expect(await recordedHead(ctx, account.address)).toBeUndefined();
  });

  it('is none when the line is not the block of its hash: a balance changed, or the hash', async () => {
    for (const change of [{ balanceRaw: '999' }, { hash: 'BC'.repeat(32) }]) {
      const ctx = context();
      const account = newAccount();
      const send = await openedAndSent(ctx, account);
      const { previous, link, signature, work } = send.block;
      await ctx.history.append(ctx.profile, {
        hash: send.hash,
        account: account.address,
        subtype: 'send',
        amountRaw: '300',
        balanceRaw: send.block.balance,
        representative: DEFAULT_REPRESENTATIVE,
        at: send.createdAt,
        signed: { previous, link, signature: signature as string, work: work as string },
        ...change,
      });
      expect(await recordedHead(ctx, account.address), JSON.stringify(change)).toBeUndefined();
    }
  });

  it("is none when another key signed the account's block", async () => {
    const ctx = context();
    const account = newAccount();
    const forged = entryOf(buildSendBlock({ address: account.address, frontier: 'AA'.repeat(32), balance: 1000n, representative: DEFAULT_REPRESENTATIVE }, { to: account.address, amount: 1n }), 'receive', newAccount());
    await recordLanded(ctx as OpsContext, forged);
    expect(await recordedHead(ctx, account.address)).toBeUndefined();
  });
});
