import { randomBytes } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildNanoUri, publicKeyToAddress, xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { findTool, runTool } from '../../../src/toolset/tools.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { commandSession, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * Contacts: names for addresses, per profile, in a private file; send @NAME and donate --to @NAME
 * pay the contact's address; an unknown name is refused, never guessed; a name whose address
 * would change is refused until confirmed, and the refusal says what would change.
 */
let sb: RunningSandbox;
let user: CliUser;
let payer: string;
const alice = publicKeyToAddress(randomBytes(32));
const aliceNew = publicKeyToAddress(randomBytes(32));

const frontierOf = async (address: string): Promise<string | undefined> => (await ledger(sb.url)).accounts.find((a) => a.address === address)?.frontier;
const balanceOf = async (address: string): Promise<bigint> => BigInt((await ledger(sb.url)).accounts.find((a) => a.address === address)?.balance ?? '0');
const receivableTo = async (address: string): Promise<bigint> =>
  (await (await commandSession(user).api()).balance(address)).pendingRaw;

beforeAll(async () => {
  sb = await sandbox();
  ({ user, address: payer } = await userWithWallet(sb.url, '5'));
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('contacts', () => {
  it('add, list: names are checked, kept per profile in a private file', async () => {
    const added = await user.json(['contacts', 'add', 'Alice', alice]);
    expect(added).toMatchObject({ _code: 0, name: 'alice', address: alice, status: 'added' });
    expect(await user.json(['contacts', 'add', '@alice', alice])).toMatchObject({ _code: 0, status: 'unchanged' });
    for (const bad of ['nano_friend', 'a b', '.dot', 'xrb_x', 'x'.repeat(33), 'ünï']) {
      expect(await user.json(['contacts', 'add', bad, alice]), bad).toMatchObject({ _code: 3, error: { code: 'INVALID_CONTACT_NAME' } });
    }
    expect(await user.json(['contacts', 'add', 'bob', 'nano_1notanaddress'])).toMatchObject({ _code: 3, error: { code: 'INVALID_ADDRESS' } });
    const listed = await user.json<{ contacts: { name: string; address: string }[] }>(['contacts', 'list']);
    expect(listed.contacts.map((c) => [c.name, c.address])).toEqual([['alice', alice]]);
    expect(await user.json(['contacts', 'list', '--profile', 'other'])).toMatchObject({ _code: 0, contacts: [] });

    const dir = join(user.configDir, 'contacts');
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    const files = (await readdir(dir)).filter((f) => f.endsWith('.json'));
    expect(files).toHaveLength(1);
    expect((await stat(join(dir, files[0] as string))).mode & 0o777).toBe(0o600);
  });

  it('send @NAME pays the contact\'s address; an unknown name sends nothing', async () => {
    const sent = await user.json<{ to: string; hash: string }>(['send', '@alice', '0.1', '--yes']);
    expect(sent).toMatchObject({ _code: 0, to: alice, contact: 'alice', amount: '0.1' });
    expect(await receivableTo(alice)).toBe(xnoToRaw('0.1'));
    const human = await user.run(['send', '@ALICE', '0.1', '--yes']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`Sent 0.1 XNO to @alice ${alice}`);

    const before = await frontierOf(payer);
    const unknown = await user.json<{ error: { message: string } }>(['send', '@carol', '0.1', '--yes']);
    expect(unknown).toMatchObject({ _code: 9, error: { code: 'NOT_FOUND' } });
    expect(unknown.error.message).toContain('@carol');
    expect(await frontierOf(payer)).toBe(before);
  });

  it('a contact whose address would change is refused until confirmed, saying what changes', async () => {
    const refused = await user.json<{ error: { code: string; message: string } }>(['contacts', 'add', 'alice', aliceNew]);
    expect(refused).toMatchObject({ _code: 10, error: { code: 'CONTACT_CHANGED' } });
    expect(refused.error.message).toContain(alice);
    expect(refused.error.message).toContain(aliceNew);
    expect((await user.json<{ contacts: { address: string }[] }>(['contacts', 'list'])).contacts[0]?.address).toBe(alice);

    const changed = await user.json(['contacts', 'add', 'alice', aliceNew, '--yes']);
    expect(changed).toMatchObject({ _code: 0, status: 'changed', address: aliceNew, previous_address: alice });
  });

  it('on a terminal the change is shown and asked: no keeps the address, yes takes the new one', async () => {
    if (ptyMissing !== undefined) return;
    const addressOfAlice = async (): Promise<string | undefined> => (await user.json<{ contacts: { address: string }[] }>(['contacts', 'list'])).contacts[0]?.address;
    const declined = onTerminal(['contacts', 'add', 'alice', alice], user.env);
    await declined.waitFor('Change the address of @alice?');
    expect(declined.output).toContain(`@alice pays ${aliceNew} now; it would pay ${alice}.`);
    declined.type('n\r');
    expect(await declined.exited).not.toBe(0);
    expect(await addressOfAlice()).toBe(aliceNew);

    const accepted = onTerminal(['contacts', 'add', 'alice', alice], user.env);
    await accepted.waitFor('Change the address of @alice?');
    accepted.type('y\r');
    expect(await accepted.exited).toBe(0);
    expect(await addressOfAlice()).toBe(alice);
  });

  it('a payment to a contact\'s address (pay URI) names the contact, in the question and the result', async () => {
    await user.json(['contacts', 'add', 'alice', alice, '--yes']);
    const uri = buildNanoUri({ address: alice, amountRaw: xnoToRaw('0.01') });
    if (ptyMissing === undefined) {
      const asked = onTerminal(['pay', uri], user.env);
      await asked.waitFor('Pay 0.01 XNO?');
      expect(asked.output).toContain(`To:       ${alice} (@alice)`);
      asked.type('n\r');
      await asked.exited;
    }
    expect(await user.json(['pay', uri, '--yes'])).toMatchObject({ _code: 0, to: alice, contact: 'alice' });
    // Back to the new address for the tests below.
    expect(await user.json(['contacts', 'add', 'alice', aliceNew, '--yes'])).toMatchObject({ _code: 0, status: 'changed' });
  });

  it('donate --to @NAME and the toolset\'s wallet.send resolve the contact through the same operation', async () => {
    const donated = await user.json(['donate', '0.01', '--to', '@alice', '--yes']);
    expect(donated).toMatchObject({ _code: 0, to: aliceNew, contact: 'alice' });
    const { envelope } = await runTool(commandSession(user), findTool('wallet.send'), { recipient_address: '@alice', amount: '0.02' });
    expect(envelope).toMatchObject({ success: true, data: { recipient: aliceNew } });
    expect(await receivableTo(aliceNew)).toBe(xnoToRaw('0.03'));
  });

  it('remove: @NAME then pays nothing', async () => {
    expect(await user.json(['contacts', 'remove', '@alice'])).toMatchObject({ _code: 0, removed: { name: 'alice', address: aliceNew } });
    expect(await user.json(['contacts', 'remove', 'alice'])).toMatchObject({ _code: 9, error: { code: 'NOT_FOUND' } });
    const balance = await balanceOf(payer);
    expect(await user.json(['send', '@alice', '0.1', '--yes'])).toMatchObject({ _code: 9 });
    expect(await balanceOf(payer)).toBe(balance);
  });
});
