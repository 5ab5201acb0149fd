import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ledgerBlock } from '../../../src/api/shape.js';
import { hashBlock, isStateBlock, signedByAccount, type LedgerBlock } from '../../../src/nano/index.js';
import { NETWORK_THRESHOLDS, thresholdsAtEpoch } from '../../../src/work/index.js';
import { vectors } from '../../helpers/ledger/vectors.js';

const legacy = JSON.parse(readFileSync(new URL('../../fixtures/legacy-blocks.json', import.meta.url), 'utf8')) as Record<string, any>;

/** The genesis open blocks of the live and dev networks (nano-node's common.cpp), as a node serves them. */
const genesisOpens = [vectors.genesis, ...vectors.other_genesis].map((g) => ({ network: g.network as string, block: g.block as Record<string, string>, hash: g.hash as string }));

describe('legacy blocks', () => {
  it.each(genesisOpens)('the $network genesis open block hashes to its hash and is signed by its account', ({ block, hash }) => {
    const parsed = ledgerBlock(block, 'block_info');
    expect(parsed.type).toBe('open');
    expect(hashBlock(parsed)).toBe(hash);
    expect(signedByAccount(parsed, block.account as string)).toBe(true);
    expect(signedByAccount(parsed, legacy.send.block.destination)).toBe(false);
  });

  it('a legacy send from the reference node: its hex balance read as raw, its hash and signature', () => {
    const parsed = ledgerBlock(JSON.stringify(legacy.send.block), 'block_info') as Extract<LedgerBlock, { type: 'send' }>;
    expect(parsed.balance).toBe(legacy.send.balance_raw);
    expect(hashBlock(parsed)).toBe(legacy.send.hash);
    expect(signedByAccount(parsed, legacy.send.account)).toBe(true);
    // Any field changed changes the hash, so the signature no longer holds.
    const more = { ...parsed, balance: (BigInt(parsed.balance) + 1n).toString() };
    expect(hashBlock(more)).not.toBe(legacy.send.hash);
    expect(signedByAccount(more, legacy.send.account, parsed.signature)).toBe(false);
  });

  it('refuses a block of no known type, and keeps state blocks as they were', () => {
    expect(() => ledgerBlock({ type: 'epoch' }, 'block_info')).toThrow(/"type" should be state, send, receive, open or change/);
    const state = vectors.state_blocks[0].block;
    const parsed = ledgerBlock(state, 'block_info');
    expect(isStateBlock(parsed)).toBe(true);
    expect(hashBlock(parsed)).toBe(vectors.state_blocks[0].hash);
  });
});

describe('work thresholds by network and epoch', () => {
  it('are nano-node\'s, as the vectors give them', () => {
    const t = vectors.work_thresholds;
    expect(NETWORK_THRESHOLDS.live).toEqual({ send: t.live.epoch_2_send_change, receive: t.live.epoch_2_receive_open_epoch, epoch1: t.live.epoch_1 });
    expect(NETWORK_THRESHOLDS.beta).toEqual({ send: t.beta.epoch_2, receive: t.beta.epoch_2_receive, epoch1: t.beta.epoch_1 });
    expect(NETWORK_THRESHOLDS.dev).toEqual({ send: t.dev.epoch_2, receive: t.dev.epoch_2_receive, epoch1: t.dev.epoch_1 });
  });

  it('an account below epoch 2 needs epoch 1\'s for every block; at epoch 2, or not known, the thresholds stay', () => {
    const dev = NETWORK_THRESHOLDS.dev;
    expect(thresholdsAtEpoch(dev, 1)).toEqual({ ...dev, send: dev.send, receive: dev.epoch1 });
    expect(thresholdsAtEpoch(dev, 0)).toEqual(thresholdsAtEpoch(dev, 1));
    expect(thresholdsAtEpoch(dev, 2)).toEqual(dev);
    expect(thresholdsAtEpoch(dev, undefined)).toEqual(dev);
    // A service's thresholds name no epoch 1: nothing to raise them to.
    expect(thresholdsAtEpoch({ send: dev.send, receive: dev.receive }, 1)).toEqual({ send: dev.send, receive: dev.receive });
    // On the live network, epoch 1's is harder than a receive's and easier than a send's.
    expect(thresholdsAtEpoch(NETWORK_THRESHOLDS.live, 1)).toEqual({ ...NETWORK_THRESHOLDS.live, receive: NETWORK_THRESHOLDS.live.epoch1 });
  });
});
