import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveAccount, xnoToRaw } from '../../src/nano/index.js';
import { addContact } from '../../src/ops/profile/contacts.js';
import { Session } from '../../src/ops/session.js';
import { replacePolicy, sealPolicy, setPolicyRule, unsetPolicyRule } from '../../src/ops/spending/policy-edit.js';
import { send } from '../../src/ops/spending/send.js';
import { auditTrail } from '../../src/ops/spending/audit.js';
import { answerApproval } from '../../src/ops/spending/approvals.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import type { AuditRecord } from '../../src/store/spending.js';
import { PASSWORD, userWithWallet } from '../helpers/processes/cli.js';
import { fund, sandbox } from '../helpers/ledger/sandbox.js';
import { tempDir } from '../helpers/processes/temp.js';

/**
 * The sealed policy in-process: only the key store password writes it, every
 * change is recorded with what it was and became, an edit by any other means
 * stops every spend until a person reseals it, and a key store made before
 * seals gets its seal key (and the policies their seals) at its first unlock.
 */
let sb: RunningSandbox;
const OTHER = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const BOB = deriveAccount({ seed: '3'.repeat(64), index: 0 }).address;
const MALLORY = deriveAccount({ seed: '4'.repeat(64), index: 0 }).address;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
});

const withPassword = (configDir: string, env: NodeJS.ProcessEnv, password = PASSWORD): Session => new Session({ password: async () => password, configDir, env });
const withoutPassword = (configDir: string, env: NodeJS.ProcessEnv): Session =>
  new Session({
    password: async () => {
      throw Object.assign(new Error('no password'), { code: 'PASSWORD_REQUIRED' });
    },
    configDir,
    env,
  });

async function trail(session: Session): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  for await (const r of auditTrail(session)) out.push(r);
  return out;
}

describe('the sealed policy', () => {
  it('is written only with the password, each change recorded with the policy before and after; a refusal is recorded too', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const person = withPassword(user.configDir, user.env);
    await setPolicyRule(person, 'day', '1', {});
    await setPolicyRule(person, 'per-send', '0.5', { frontEnd: 'mcp' });
    await unsetPolicyRule(person, 'day', {});
    await expect(setPolicyRule(withPassword(user.configDir, user.env, 'a wrong password'), 'day', '100', {})).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
    const records = (await trail(person)).filter((r) => r.kind === 'policy');
    expect(records.map((r) => [r.decision, r.rule, r.before, r.after])).toEqual([
      ['policy_changed', 'set day 1', {}, { day: '1' }],
      ['policy_changed', 'set per-send 0.5 --front-end mcp', { day: '1' }, { day: '1', 'front-ends': { mcp: { 'per-send': '0.5' } } }],
      ['policy_changed', 'unset day', { day: '1', 'front-ends': { mcp: { 'per-send': '0.5' } } }, { 'front-ends': { mcp: { 'per-send': '0.5' } } }],
      ['denied', 'set day 100', undefined, undefined],
    ]);
    expect(records[3]?.message).toContain('WRONG_PASSWORD');
  });

  it('edited in config.json, stops every spend (POLICY_TAMPERED, recorded) until a person reseals it or replaces it; rule by rule it is not changed meanwhile', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const person = withPassword(user.configDir, user.env);
    await setPolicyRule(person, 'per-send', '0.1', {});
    const file = join(user.configDir, 'config.json');
    const config = JSON.parse(await readFile(file, 'utf8')) as { profiles: { default: { policy: Record<string, unknown> } } };
    config.profiles.default.policy = { perSend: xnoToRaw('100').toString() };
    await writeFile(file, JSON.stringify(config));
    await expect(send(person, { to: OTHER, amount: { xno: '0.2' } })).rejects.toMatchObject({ code: 'POLICY_TAMPERED', hint: expect.stringContaining('nanopay policy seal') });
    await expect(setPolicyRule(person, 'day', '5', {})).rejects.toMatchObject({ code: 'POLICY_TAMPERED' });
    expect((await trail(person)).at(-1)).toMatchObject({ decision: 'denied', rule: 'seal', kind: 'send' });
    // The person puts back a policy they trust, whole: spends are judged by it again.
    await replacePolicy(person, { 'per-send': '0.1' });
    await expect(send(person, { to: OTHER, amount: { xno: '0.2' } })).rejects.toMatchObject({ code: 'POLICY_DENIED', details: { rule: 'per-send' } });
    // Or, having looked at an edit, seals it as it stands.
    config.profiles.default.policy = { perSend: xnoToRaw('0.3').toString() };
    await writeFile(file, JSON.stringify(config));
    await expect(send(person, { to: OTHER, amount: { xno: '0.2' } })).rejects.toMatchObject({ code: 'POLICY_TAMPERED' });
    await expect(sealPolicy(withoutPassword(user.configDir, { ...user.env, NANOPAY_PASSWORD: '' }))).rejects.toMatchObject({ code: 'PASSWORD_REQUIRED' });
    await sealPolicy(person);
    await expect(send(person, { to: OTHER, amount: { xno: '0.2' } })).resolves.toMatchObject({ amount: '0.2' });
  });

  it('keeps the address a contact it names had when it was sealed: changing the contact moves no rule until a person reseals', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const person = withPassword(user.configDir, user.env);
    await addContact(person, { name: 'bob', address: BOB });
    await setPolicyRule(person, 'deny', undefined, { recipient: '@bob' });
    await expect(send(person, { to: BOB, amount: { xno: '0.1' } })).rejects.toMatchObject({ code: 'POLICY_DENIED', details: { rule: 'deny --recipient' } });
    // @bob pointed elsewhere: the rule still names the address sealed, not the contact's new one.
    await addContact(person, { name: 'bob', address: MALLORY, confirm: async () => true });
    await expect(send(person, { to: BOB, amount: { xno: '0.1' } })).rejects.toMatchObject({ code: 'POLICY_DENIED', details: { rule: 'deny --recipient' } });
    await expect(send(person, { to: MALLORY, amount: { xno: '0.1' } })).resolves.toMatchObject({ amount: '0.1' });
    // Resealed, the rule names what @bob is now.
    await sealPolicy(person);
    await expect(send(person, { to: MALLORY, amount: { xno: '0.1' } })).rejects.toMatchObject({ code: 'POLICY_DENIED', details: { rule: 'deny --recipient' } });
  });
});

describe('approvals', () => {
  it('one that fits a spend is used up by it even where no rule asks for one any more; one that does not fit is refused, not ignored', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const person = withPassword(user.configDir, user.env);
    await setPolicyRule(person, 'ask-above', '0.1', {});
    const held = await send(person, { to: OTHER, amount: { xno: '0.2' } }).catch((error: { details: { approval: { id: string } } }) => error.details.approval.id);
    expect(held).toMatch(/^apr_/);
    await answerApproval(person, held as string, 'approve', 'a test, with the password');
    await unsetPolicyRule(person, 'ask-above', {});
    // No rule holds 0.3 now: an approval for 0.2 named with it is still refused.
    await expect(send(person, { to: OTHER, amount: { xno: '0.3' }, approval: held as string })).rejects.toMatchObject({ code: 'APPROVAL_INVALID' });
    await expect(send(person, { to: OTHER, amount: { xno: '0.2' }, approval: held as string })).resolves.toMatchObject({ amount: '0.2' });
    expect((await (await person.dataStore()).approvals.get(person.profileName, held as string))?.state).toBe('used');
    await expect(send(person, { to: OTHER, amount: { xno: '0.2' }, approval: held as string })).rejects.toMatchObject({ code: 'APPROVAL_INVALID', message: expect.stringContaining('used already') });
  });
});

describe('a key store made before seals', () => {
  it('gets its seal key at its first unlock, and the policy in force is sealed as it stands; from then on an edit is detected', async () => {
    const configDir = await tempDir('nanopay-before-seals-');
    await copyFile(new URL('../fixtures/keystore-before-seals.json', import.meta.url), join(configDir, 'keystore.json'));
    const address = deriveAccount({ seed: `${'0'.repeat(63)}1`, index: 0 }).address;
    // What a version before seals kept: a wallet, and its limits (read as the policy's rules), with no seal.
    await writeFile(
      join(configDir, 'config.json'),
      JSON.stringify({ version: 1, profiles: { default: { activeWallet: 'default', activeAccount: 0, limits: { perSend: xnoToRaw('0.5').toString() }, wallets: { default: { kind: 'seed', createdAt: '2026-01-01T00:00:00.000Z', accounts: { '0': address } } } } } }),
      { mode: 0o600 },
    );
    const env = { NANOPAY_CONFIG_DIR: configDir, NANOPAY_API_URL: sb.url, NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url };
    await fund(sb.url, address, '2');
    const before = JSON.parse(await readFile(join(configDir, 'keystore.json'), 'utf8')) as { key: { data: string } };
    const person = withPassword(configDir, env, 'password before seals');
    // The first spend unlocks it: its limits hold, as sealed.
    await expect(send(person, { to: OTHER, amount: { xno: '0.6' } })).rejects.toMatchObject({ code: 'POLICY_DENIED', details: { rule: 'per-send' } });
    const after = JSON.parse(await readFile(join(configDir, 'keystore.json'), 'utf8')) as { key: { data: string }; secrets: Record<string, unknown> };
    // The wrapped keys grew by the seal key (32 bytes more); every secret is still there.
    expect(Buffer.from(after.key.data, 'base64').length).toBe(Buffer.from(before.key.data, 'base64').length + 32);
    expect(Object.keys(after.secrets)).toEqual(['profile/default/wallet/default/secret']);
    const sealed = JSON.parse(await readFile(join(configDir, 'config.json'), 'utf8')) as { profiles: { default: Record<string, unknown> } };
    expect(sealed.profiles.default).toMatchObject({ policy: { perSend: xnoToRaw('0.5').toString() }, policySeal: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(sealed.profiles.default.limits).toBeUndefined();
    // From now on an edit stops every spend.
    delete sealed.profiles.default.policy;
    await writeFile(join(configDir, 'config.json'), JSON.stringify(sealed));
    await expect(send(withPassword(configDir, env, 'password before seals'), { to: OTHER, amount: { xno: '0.6' } })).rejects.toMatchObject({ code: 'POLICY_TAMPERED' });
  });
});
