import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawToXno, xnoToRaw } from '../../src/nano/index.js';
import { receive } from '../../src/ops/account/receive.js';
import { setRepresentative } from '../../src/ops/account/representative.js';
import { payUri } from '../../src/ops/requests/payments.js';
import { Session } from '../../src/ops/session.js';
import { topup } from '../../src/ops/spending/credits.js';
import { donate } from '../../src/ops/spending/donate.js';
import { judgeDry } from '../../src/ops/spending/movement.js';
import { setPolicyRule, unsetPolicyRule } from '../../src/ops/spending/policy-edit.js';
import type { FrontEnd } from '../../src/ops/spending/policy.js';
import { send } from '../../src/ops/spending/send.js';
import { countedSpends } from '../../src/ops/spending/spend-log.js';
import { auditTrail } from '../../src/ops/spending/audit.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { NanoPay } from '../../src/sdk/nanopay.js';
import { DEV_THRESHOLDS } from '../../src/work/index.js';
import { signCheque } from '../../src/x402/client.js';
import { nanoRequirement } from '../../src/x402/nano-exact.js';
import { PASSWORD, userWithWallet, type CliUser } from '../helpers/processes/cli.js';
import { fund, sandbox } from '../helpers/ledger/sandbox.js';

const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});
afterAll(async () => {
  await sb.close();
});

const as = (user: CliUser, frontEnd: FrontEnd): Session => new Session({ password: async () => PASSWORD, env: user.env, configDir: user.configDir, frontEnd });
const codeOf = (promise: Promise<unknown>): Promise<unknown> => promise.then(() => 'paid', (e: { code?: string; details?: { rule?: string } }) => `${e.code} ${e.details?.rule ?? ''}`.trim());

/** The spending decisions of the trail (its records of policy changes left out). */
async function trail(session: Session): Promise<{ decision: string; kind: string; front_end: string; rule: string | null; status?: string }[]> {
  const out = [];
  for await (const r of auditTrail(session)) if (r.kind !== 'policy') out.push(r);
  return out;
}

describe('every spend is decided by the one policy', () => {
  it('send, pay, donate, top-up and the SDK each meet it; a representative change is no spend', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const cli = as(user, 'cli');
    await setPolicyRule(cli, 'per-send', '0.001', {});
    expect(await codeOf(send(cli, { to: other, amount: { xno: '0.002' } }))).toBe('POLICY_DENIED per-send');
    expect(await codeOf(payUri(cli, `nano:${other}?amount=${xnoToRaw('0.002')}`, {}))).toBe('POLICY_DENIED per-send');
    expect(await codeOf(donate(cli, { amount: { xno: '0.002' } }))).toBe('POLICY_DENIED per-send');
    // 1000 credits cost 0.09 XNO on the sandbox.
    expect(await codeOf(topup(cli, { tier: 1000 }))).toBe('POLICY_DENIED per-send');
    expect((await setRepresentative(cli, { representative: other })).changed).toBe(true);
    await unsetPolicyRule(cli, 'per-send', {});
    // The SDK is a front end of its own: a rule for it holds there, and not for the CLI.
    await setPolicyRule(cli, 'per-send', '0.001', { frontEnd: 'sdk' });
    const sdk = new NanoPay({ password: PASSWORD, configDir: user.configDir, env: user.env });
    expect(await codeOf(sdk.send(other, '0.002'))).toBe('POLICY_DENIED per-send --front-end sdk');
    expect(await codeOf(send(cli, { to: other, amount: { xno: '0.002' } }))).toBe('paid');
    const kinds = (await trail(cli)).map((r) => `${r.front_end} ${r.kind} ${r.decision}`);
    expect(kinds).toEqual(['cli send denied', 'cli send denied', 'cli donate denied', 'cli topup denied', 'sdk send denied', 'cli send allowed']);
  });

  it('a dry run is judged as the spend would be, and records nothing', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const cli = as(user, 'cli');
    await setPolicyRule(cli, 'ask-above', '0.1', {});
    expect(await send(cli, { to: other, amount: { xno: '0.2' }, dryRun: true })).toMatchObject({ dry_run: true, hash: null, policy: { outcome: 'ask', rule: 'ask-above' } });
    await setPolicyRule(cli, 'day', '0.1', {});
    expect(await codeOf(send(cli, { to: other, amount: { xno: '0.2' }, dryRun: true }))).toBe('POLICY_DENIED day');
    expect(await trail(cli)).toEqual([]);
    expect((await (await cli.dataStore()).approvals.list(cli.profileName, Date.now())).length).toBe(0);
    // Judged alone, as a plan or a dry run judges it.
    const ctx = await cli.context();
    expect(await judgeDry(ctx, { account: await cli.address(), to: other, amountRaw: xnoToRaw('0.05'), kind: 'send' })).toEqual({ outcome: 'allow' });
  });
});

describe('x402 cheques and the budget', () => {
  it('an outstanding cheque of one account counts for every account (lanes) until it is resolved; cancelled, it returns to the budget', async () => {
    const { user, address } = await userWithWallet(sb.url, '1');
    const session = as(user, 'sdk');
    await fund(sb.url, await session.address(undefined, 1), '1');
    await receive(session, { index: 1 });
    await setPolicyRule(session, 'day', '0.01', {});
    const requirement = nanoRequirement(other, xnoToRaw('0.006'), 'nano:dev', DEV_THRESHOLDS.send);
    const cheque = { maxXno: '1', chequeFor: 'https://api.example.com/report' };
    await signCheque(session, requirement, cheque);
    const ctx = await session.context();
    const counted = async (): Promise<string> => rawToXno((await countedSpends(ctx, Date.now() - 24 * 60 * 60_000)).reduce((sum, s) => sum + s.amountRaw, 0n));
    expect(await counted()).toBe('0.006');
    expect(await codeOf(signCheque(session, requirement, { ...cheque, index: 1 }))).toBe('POLICY_DENIED day');
    // The account's next block resolves the cheque: never cashed, it is cancelled by a block on its previous.
    await receive(session, { index: 0 });
    expect(await session.journal.read(address)).toBeUndefined();
    expect(await counted()).toBe('0');
    expect((await trail(session)).find((r) => r.kind === 'x402' && r.decision === 'allowed')).toMatchObject({ status: 'cancelled', front_end: 'sdk' });
    await signCheque(session, requirement, { ...cheque, index: 1 });
    expect(await counted()).toBe('0.006');
  });
});
