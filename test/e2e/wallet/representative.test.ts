import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REPRESENTATIVE, buildChangeBlock, publicKeyToAddress } from '../../../src/nano/index.js';
import { readAccountHead, signAndJournal } from '../../../src/ops/ledger/chain.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { stateBlockOf } from '../../helpers/ledger/chain.js';

/**
 * The representative: a profile setting (validated) that new accounts open with, and
 * `representative set`, a change block published through the account lock and the journal,
 * on both backends (the service's /block/publish and the node's process).
 */
let sb: RunningSandbox;

const someAddress = (): string => publicKeyToAddress(randomBytes(32));

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

/** The representative written in a block, read from the ledger's side. */
async function representativeOf(owner: BackendUser, hash: string): Promise<string> {
  return stateBlockOf(await (await owner.session.api()).blockInfo(hash)).representative;
}

describe.each(BACKENDS)('representative on the %s backend', (backend) => {
  let owner: BackendUser;
  const configured = someAddress();

  beforeAll(async () => {
    owner = await backendUser(sb, backend);
  });

  it('config set representative takes only an address, and a new account opens with it', async () => {
    const refused = await owner.user.json(['config', 'set', 'representative', 'nano_not_an_address']);
    expect(refused).toMatchObject({ _code: 3, error: { code: 'INVALID_ADDRESS' } });
    const set = await owner.user.json<{ value: string; source: string }>(['config', 'set', 'representative', configured]);
    expect(set).toMatchObject({ _code: 0, value: configured, source: 'profile' });

    await fund(sb.url, owner.address, '2');
    const received = await owner.user.json<{ received: { hash: string; subtype: string }[] }>(['receive']);
    expect(received.received).toHaveLength(1);
    expect(received.received[0]?.subtype).toBe('open');
    expect(await representativeOf(owner, received.received[0]?.hash as string)).toBe(configured);

    const shown = await owner.user.json(['representative']);
    expect(shown).toMatchObject({ _code: 0, account: owner.address, representative: configured, configured, opened: true });
  });

  it('representative set publishes a change block; without a terminal it needs --yes; a repeat signs nothing', async () => {
    const next = someAddress();
    const before = (await ledger(sb.url)).accounts.find((a) => a.address === owner.address);

    const unconfirmed = await owner.user.json(['representative', 'set', next]);
    expect(unconfirmed).toMatchObject({ _code: 2, error: { code: 'USAGE' } });
    expect((await ledger(sb.url)).accounts.find((a) => a.address === owner.address)?.frontier).toBe(before?.frontier);

    const changed = await owner.user.json<{ hash: string }>(['representative', 'set', next, '--yes']);
    expect(changed).toMatchObject({ _code: 0, changed: true, representative: next, previous_representative: configured });
    const after = await ledger(sb.url);
    const block = after.blocks.find((b) => b.hash === changed.hash);
    expect(block).toMatchObject({ subtype: 'change', account: owner.address, balance: before?.balance, previous: before?.frontier });
    expect(await representativeOf(owner, changed.hash)).toBe(next);
    expect(await owner.user.json(['representative'])).toMatchObject({ representative: next, configured });

    const again = await owner.user.json(['representative', 'set', next, '--yes']);
    expect(again).toMatchObject({ _code: 0, changed: false, hash: null });
    expect((await ledger(sb.url)).accounts.find((a) => a.address === owner.address)?.frontier).toBe(changed.hash);

    // Without an address: back to the configured one.
    const back = await owner.user.json<{ hash: string }>(['representative', 'set', '--yes']);
    expect(back).toMatchObject({ _code: 0, changed: true, representative: configured });
  });

  it('a change block signed by a run that died before publishing is published first, then the new one follows it', async () => {
    const ctx = await owner.session.context();
    const signer = await owner.session.account();
    const head = await readAccountHead(ctx, signer.address);
    const orphan = someAddress();
    const entry = await signAndJournal(ctx, signer, buildChangeBlock(head.state, { representative: orphan }), 'change', head.thresholds);

    const next = someAddress();
    const changed = await owner.user.json<{ hash: string; previous_representative: string }>(['representative', 'set', next, '--yes']);
    expect(changed).toMatchObject({ _code: 0, changed: true, previous_representative: orphan });
    const blocks = (await ledger(sb.url)).blocks;
    expect(blocks.find((b) => b.hash === entry.hash)).toMatchObject({ subtype: 'change', previous: head.state.frontier });
    expect(blocks.find((b) => b.hash === changed.hash)).toMatchObject({ subtype: 'change', previous: entry.hash });
    expect(await owner.session.journal.read(signer.address)).toBeUndefined();
  });

  it('an account without a block has no representative to change', async () => {
    const fresh = await backendUser(sb, backend);
    const refused = await fresh.user.json(['representative', 'set', someAddress(), '--yes']);
    expect(refused).toMatchObject({ _code: 9, error: { code: 'ACCOUNT_NOT_FOUND' } });
    expect(await fresh.user.json(['representative'])).toMatchObject({ _code: 0, representative: null, opened: false });
    expect(await fresh.user.json(['config', 'set', 'representative', someAddress()])).toMatchObject({ _code: 0, source: 'profile' });
    expect(await fresh.user.json(['config', 'set', 'representative', '--unset'])).toMatchObject({ _code: 0, source: 'default', value: DEFAULT_REPRESENTATIVE });
    const fromEnv = someAddress();
    expect(await fresh.user.json(['representative'], { env: { NANOPAY_REPRESENTATIVE: fromEnv } })).toMatchObject({ configured: fromEnv });
    expect(await fresh.user.json(['representative'], { env: { NANOPAY_REPRESENTATIVE: 'nano_wrong' } })).toMatchObject({ _code: 3, error: { code: 'INVALID_ADDRESS' } });
  });
});
