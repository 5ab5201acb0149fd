import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../src/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { fund } from '../helpers/ledger/sandbox.js';

/** The SDK's history, contacts and representative: the same operations as the commands, in-process. */
let sb: RunningSandbox;
let configDir: string;

beforeAll(async () => {
  sb = await sdk.startSandbox({ port: 0 });
  configDir = await mkdtemp(join(tmpdir(), 'nanopay-sdk-'));
});

afterAll(async () => {
  await sb.close();
  await sdk.shutdownWorkers();
  await rm(configDir, { recursive: true, force: true });
});

describe('the SDK', () => {
  it('contacts, history and the representative, on a node backend', async () => {
    const pay = new sdk.NanoPay({ password: 'sdk password', configDir, env: { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url } });
    const wallet = await pay.createWallet('sdk');
    await fund(sb.url, wallet.address, '2');
    await pay.receive();
    const bob = sdk.publicKeyToAddress(randomBytes(32));
    expect(await pay.addContact('Bob', bob)).toMatchObject({ name: 'bob', status: 'added' });
    await expect(pay.addContact('bob', wallet.address)).rejects.toMatchObject({ code: 'CONTACT_CHANGED' });
    expect(await pay.contacts()).toEqual([expect.objectContaining({ name: 'bob', address: bob })]);
    const sent = await pay.send('@bob', '0.5', { id: 'sdk-1' });
    expect(sent).toMatchObject({ to: bob, contact: 'bob' });

    const rep = sdk.publicKeyToAddress(randomBytes(32));
    expect(await pay.setRepresentative(rep)).toMatchObject({ changed: true, representative: rep });
    expect(await pay.representative()).toMatchObject({ representative: rep, opened: true });

    const history = await pay.history({ limit: 10 });
    expect(history.history.map((i) => [i.type, i.amount, i.id])).toEqual([
      ['change', '0', undefined],
      ['send', '0.5', 'sdk-1'],
      ['open', '2', undefined],
    ]);
    const stream = await pay.historyStream();
    const hashes: string[] = [];
    for await (const item of stream.items) hashes.push(item.hash);
    expect(hashes).toEqual(history.history.map((i) => i.hash));
    expect(await pay.removeContact('@bob')).toMatchObject({ name: 'bob' });
  });
});
