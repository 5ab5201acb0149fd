import { describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../../src/nano/index.js';
import { evaluate, profilePolicy, stricter, type CountedSpend, type SpendFacts } from '../../../src/ops/spending/policy.js';
import { replacePolicy } from '../../../src/ops/spending/policy-edit.js';
import { hostOfUrl, hostRule } from '../../../src/ops/spending/hosts.js';
import { x402Spend } from '../../../src/x402/client.js';
import { denial } from '../../../src/ops/spending/decide.js';
import { Session } from '../../../src/ops/session.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { join } from 'node:path';
import { tempDir } from '../../helpers/processes/temp.js';
import type { SpendingPolicy } from '../../../src/wallet/config.js';

const alice = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const bob = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
const HOUR = 60 * 60_000;
const NOW = Date.parse('2026-05-01T12:00:00Z');
const raw = (xno: string): string => xnoToRaw(xno).toString();

const spend = (xno: string, extra: Partial<SpendFacts> = {}): SpendFacts => ({ frontEnd: 'cli', kind: 'send', to: alice, amountRaw: xnoToRaw(xno), at: NOW, ...extra });
const past = (xno: string, agoMs: number, extra: Partial<CountedSpend> = {}): CountedSpend => ({ to: alice, frontEnd: 'cli', kind: 'send', amountRaw: xnoToRaw(xno), at: NOW - agoMs, attended: false, ...extra });

describe('the spending policy', () => {
  it('allows everything without rules', () => {
    expect(evaluate({}, spend('1000'), [past('5', 1)])).toEqual({ outcome: 'allow' });
  });

  it('refuses over a per-send maximum of any scope, naming the rule as policy set takes it', () => {
    const policy: SpendingPolicy = { perSend: raw('5'), frontEnds: { mcp: { perSend: raw('1') }, x402: { perSend: raw('0.01') } }, recipients: { [bob]: { perSend: raw('2') } } };
    expect(evaluate(policy, spend('6'))).toMatchObject({ outcome: 'deny', rule: 'per-send', remainingRaw: xnoToRaw('5') });
    expect(evaluate(policy, spend('1.5', { frontEnd: 'mcp' }))).toMatchObject({ outcome: 'deny', rule: 'per-send --front-end mcp' });
    expect(evaluate(policy, spend('1.5', { frontEnd: 'toolset' }))).toEqual({ outcome: 'allow' });
    // x402 as a front end is every x402 payment, whoever asked.
    expect(evaluate(policy, spend('0.02', { frontEnd: 'sdk', kind: 'x402', host: 'api.example.com' }))).toMatchObject({ rule: 'per-send --front-end x402' });
    expect(evaluate(policy, spend('3', { to: bob }))).toMatchObject({ rule: `per-send --recipient ${bob}` });
  });

  it('counts rolling budgets per window, per recipient (by contact too), host and front end; the refusal says what is left', () => {
    // In the last hour 2; in the last 24 hours 2 + 7 + 0.4 (to bob, x402); in the last 30 days 30 more.
    const counted = [past('2', HOUR - 1), past('7', 2 * HOUR), past('30', 10 * 24 * HOUR), past('0.4', HOUR * 3, { to: bob, host: 'api.example.com:8443', kind: 'x402' })];
    expect(evaluate({ hour: raw('3') }, spend('1.5'), counted)).toMatchObject({ outcome: 'deny', rule: 'hour', remainingRaw: xnoToRaw('1') });
    expect(evaluate({ hour: raw('3'), day: raw('10') }, spend('0.6'), counted)).toEqual({ outcome: 'allow' });
    expect(evaluate({ day: raw('10') }, spend('0.7'), counted)).toMatchObject({ outcome: 'deny', rule: 'day', remainingRaw: xnoToRaw('0.6') });
    expect(evaluate({ month: raw('40') }, spend('1'), counted)).toMatchObject({ outcome: 'deny', rule: '30d', remainingRaw: xnoToRaw('0.6') });
    const byContact: SpendingPolicy = { recipients: { '@bob': { day: raw('1') } } };
    expect(evaluate(byContact, spend('0.7', { to: bob }), counted, { bob })).toMatchObject({ outcome: 'deny', rule: 'day --recipient @bob', remainingRaw: xnoToRaw('0.6') });
    expect(evaluate(byContact, spend('0.7'), counted, { bob })).toEqual({ outcome: 'allow' });
    // An unknown contact names no one: its rule holds for nobody.
    expect(evaluate(byContact, spend('0.7', { to: bob }), counted, {})).toEqual({ outcome: 'allow' });
    const byHost: SpendingPolicy = { hosts: { 'api.example.com': { day: raw('0.5') } } };
    expect(evaluate(byHost, spend('0.2', { to: bob, kind: 'x402', host: 'api.example.com' }), counted)).toMatchObject({ rule: 'day --host api.example.com', remainingRaw: xnoToRaw('0.1') });
    expect(evaluate({ frontEnds: { cli: { day: raw('9') } } }, spend('0.1'), counted)).toMatchObject({ rule: 'day --front-end cli' });
    expect(evaluate({ frontEnds: { cli: { day: raw('9') } } }, spend('0.1', { frontEnd: 'mcp' }), counted)).toEqual({ outcome: 'allow' });
  });

  it('refuses a recipient or host on the deny list, and one off a non-empty allow list (hosts are x402 payments only)', () => {
    const policy: SpendingPolicy = { deny: { recipients: ['@bob'], hosts: ['*.evil.example'] }, allow: { hosts: ['api.example.com'] } };
    expect(evaluate(policy, spend('1', { to: bob }), [], { bob })).toMatchObject({ outcome: 'deny', rule: 'deny --recipient', remainingRaw: 0n });
    expect(evaluate(policy, spend('1', { kind: 'x402', host: 'a.evil.example' }))).toMatchObject({ rule: 'deny --host' });
    expect(evaluate(policy, spend('1', { kind: 'x402', host: 'other.example' }))).toMatchObject({ rule: 'allow --host' });
    expect(evaluate(policy, spend('1', { kind: 'x402', host: 'api.example.com:443' }))).toEqual({ outcome: 'allow' });
    expect(evaluate(policy, spend('1'))).toEqual({ outcome: 'allow' });
    expect(evaluate({ allow: { recipients: [bob] } }, spend('1'))).toMatchObject({ outcome: 'deny', rule: 'allow --recipient' });
  });

  it('asks above ask-above, and only when no refusal applies', () => {
    const policy: SpendingPolicy = { askAbove: raw('0.5'), perSend: raw('2') };
    expect(evaluate(policy, spend('0.5'))).toEqual({ outcome: 'allow' });
    expect(evaluate(policy, spend('0.6'))).toMatchObject({ outcome: 'ask', rule: 'ask-above' });
    expect(evaluate(policy, spend('3'))).toMatchObject({ outcome: 'deny', rule: 'per-send' });
  });

  it("ask-above-hour counts the last hour of spends made without a person's yes: approved ones and older ones do not count", () => {
    const policy: SpendingPolicy = { frontEnds: { agent: { askAboveHour: raw('0.1') } } };
    const agent = (xno: string, ago: number, attended = false) => past(xno, ago, { frontEnd: 'agent', attended });
    expect(evaluate(policy, spend('0.09', { frontEnd: 'agent' }), [])).toEqual({ outcome: 'allow' });
    expect(evaluate(policy, spend('0.09', { frontEnd: 'agent' }), [agent('0.09', 1000)])).toMatchObject({ outcome: 'ask', rule: 'ask-above-hour --front-end agent' });
    expect(evaluate(policy, spend('0.09', { frontEnd: 'agent' }), [agent('0.09', 1000, true)])).toEqual({ outcome: 'allow' });
    expect(evaluate(policy, spend('0.09', { frontEnd: 'agent' }), [agent('0.09', HOUR)])).toEqual({ outcome: 'allow' });
    // Another front end's spends are not the agent's.
    expect(evaluate(policy, spend('0.09', { frontEnd: 'agent' }), [past('0.09', 1000)])).toEqual({ outcome: 'allow' });
  });

  it('reads the settings of versions before it as its rules, and a process may only add stricter rules', () => {
    const policy = profilePolicy({ wallets: {}, limits: { perSend: raw('1'), perDay: raw('5') }, x402Max: raw('0.01') });
    expect(policy).toEqual({ perSend: raw('1'), day: raw('5'), frontEnds: { x402: { perSend: raw('0.01') } } });
    const both = stricter(policy, { perSend: raw('3'), day: raw('2'), frontEnds: { agent: { askAboveHour: raw('0.1') } } });
    expect(both).toMatchObject({ perSend: raw('1'), day: raw('2'), frontEnds: { x402: { perSend: raw('0.01') }, agent: { askAboveHour: raw('0.1') } } });
  });

  it('has a JSON form that reads back as itself; a wrong one is refused whole, changing nothing', async () => {
    const configDir = await tempDir('nanopay-policy-');
    await KeyStore.create(join(configDir, 'keystore.json'), 'the password', 2 ** 10);
    const session = new Session({ password: async () => 'the password', configDir, env: {} });
    const doc = { 'per-send': '1', day: '10', '30d': '100', 'ask-above': '0.5', recipients: { '@bob': { day: '1' } }, hosts: { 'api.example.com': { 'per-send': '0.01' } }, 'front-ends': { mcp: { hour: '2' } }, deny: { hosts: ['evil.example'] }, 'approval-ttl': '30m' };
    expect((await replacePolicy(session, doc)).policy).toEqual(doc);
    for (const wrong of [{ weekly: '1' }, { day: 10 }, { 'front-ends': { cli2: { day: '1' } } }, { hosts: { 'https://x/': { day: '1' } } }]) {
      await expect(replacePolicy(session, wrong)).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    }
    expect((await replacePolicy(session, doc)).policy).toEqual(doc);
    await session.close();
  });

  it('matches hosts by name on any port, by name and port, or a whole domain', () => {
    const host = (rule: string, h: string): string => evaluate({ hosts: { [rule]: { perSend: '0' } } }, spend('1', { kind: 'x402', host: h })).outcome;
    expect(host('api.example.com', 'api.example.com:8443')).toBe('deny');
    expect(host('api.example.com:8443', 'api.example.com')).toBe('allow');
    expect(host('*.example.com', 'a.b.example.com')).toBe('deny');
    expect(host('*.example.com', 'example.com')).toBe('allow');
    expect(host('example.com', 'badexample.com')).toBe('allow');
  });

  it('compares hosts in one form: case, trailing dot, IDNA, default ports and IP literals never slip past a rule', () => {
    // What a payment to a URL is judged as, and what the audit shows.
    const paying = (url: string): string | undefined => x402Spend(url, {} as never, undefined, undefined).host;
    expect(paying('https://Evil.Example./pay')).toBe('evil.example');
    expect(paying('https://evil.example:443/pay')).toBe('evil.example');
    expect(paying('http://evil.example/pay')).toBe('evil.example:80');
    expect(paying('https://bücher.de/')).toBe('xn--bcher-kva.de');
    expect(paying('http://127.1:8402/')).toBe('127.0.0.1:8402');
    expect(paying('http://0x7f000001:8402/')).toBe('127.0.0.1:8402');
    expect(paying('http://[::ffff:127.0.0.1]:8402/')).toBe('127.0.0.1:8402');
    expect(paying('http://[0:0::1]:8402/')).toBe('[::1]:8402');
    expect(hostOfUrl(new URL('https://a.evil.example../'))).toBe('a.evil.example');
    // Each rule against each spelling of the host it names, by every kind of host rule.
    const judged = (policy: SpendingPolicy, url: string, xno = '1') => evaluate(policy, spend(xno, { kind: 'x402', host: paying(url) }));
    for (const url of ['https://evil.example./x', 'https://EVIL.EXAMPLE/x', 'https://evil.example:443/x', 'https://sub.evil.example./x']) {
      const name = url.includes('sub.') ? '*.evil.example' : 'evil.example';
      expect(judged({ deny: { hosts: [name] } }, url)).toMatchObject({ outcome: 'deny', rule: 'deny --host' });
      expect(judged({ hosts: { [name]: { perSend: raw('0.5') } } }, url)).toMatchObject({ outcome: 'deny', rule: `per-send --host ${name}` });
      expect(judged({ hosts: { [name]: { askAbove: raw('0.5') } } }, url)).toMatchObject({ outcome: 'ask', rule: `ask-above --host ${name}` });
      expect(judged({ allow: { hosts: [name] } }, url)).toEqual({ outcome: 'allow' });
    }
    // A rule written with a default port names the host on that port: :443 is https's, :80 http's.
    expect(judged({ deny: { hosts: ['evil.example:443'] } }, 'https://evil.example/x').outcome).toBe('deny');
    expect(judged({ deny: { hosts: ['evil.example:443'] } }, 'http://evil.example/x').outcome).toBe('allow');
    expect(judged({ deny: { hosts: ['evil.example:80'] } }, 'http://evil.example/x').outcome).toBe('deny');
    expect(judged({ deny: { hosts: ['Evil.Example.:443'] } }, 'https://EVIL.example./x').outcome).toBe('deny');
    expect(judged({ deny: { hosts: ['bücher.de'] } }, 'https://xn--bcher-kva.de/').outcome).toBe('deny');
    expect(judged({ deny: { hosts: ['127.1'] } }, 'http://[::ffff:7f00:1]:3000/').outcome).toBe('deny');
    expect(judged({ deny: { hosts: ['127.0.0.1'] } }, 'http://127.1:3000/').outcome).toBe('deny');
    // Rules are kept in the one form; what is no host is refused.
    expect(['EVIL.example.', 'evil.example:443', '*.Evil.Example', 'bücher.de', '127.1', '[0:0::1]:80'].map(hostRule)).toEqual(['evil.example', 'evil.example:443', '*.evil.example', 'xn--bcher-kva.de', '127.0.0.1', '[::1]:80']);
    for (const wrong of ['https://evil.example/', 'evil.example/x', 'user@evil.example', 'evil..example', 'evil.example:0', 'evil.example:99999', '*.[::1]', '']) expect(() => hostRule(wrong)).toThrow(/is not a host/);
  });

  it('refuses an x402 payment whose host is not known while any host rule exists (fail closed); without host rules it is judged as before', () => {
    const unknown = spend('0.1', { kind: 'x402' });
    for (const policy of [{ deny: { hosts: ['evil.example'] } }, { allow: { hosts: ['api.example.com'] } }, { hosts: { 'api.example.com': { day: raw('5') } } }] as SpendingPolicy[]) {
      const verdict = evaluate(policy, unknown);
      expect(verdict).toMatchObject({ outcome: 'deny', rule: 'host unknown', message: expect.stringMatching(/did not say which host/) });
      expect(denial(verdict)).toMatchObject({ code: 'POLICY_DENIED', hint: expect.stringMatching(/onPaymentRequired/) });
    }
    expect(evaluate({ day: raw('5') }, unknown)).toEqual({ outcome: 'allow' });
    // A send has no host, and host rules do not judge it.
    expect(evaluate({ deny: { hosts: ['evil.example'] } }, spend('0.1'))).toEqual({ outcome: 'allow' });
  });

  it('judges a spend of an unlocked session granted every front end by the rules of each (x402 rules stay with x402 payments)', () => {
    const policy: SpendingPolicy = { frontEnds: { mcp: { perSend: raw('1') }, agent: { day: raw('2') }, x402: { perSend: raw('0.01') } } };
    expect(evaluate(policy, spend('1.5', { frontEnd: '*' }))).toMatchObject({ outcome: 'deny', rule: 'per-send --front-end mcp' });
    expect(evaluate(policy, spend('0.9', { frontEnd: '*' }), [past('1.5', HOUR, { frontEnd: 'agent' })])).toMatchObject({ outcome: 'deny', rule: 'day --front-end agent' });
    // What such a session signed counts in every front end's budget.
    expect(evaluate(policy, spend('0.9', { frontEnd: 'agent' }), [past('1.5', HOUR, { frontEnd: '*' })])).toMatchObject({ outcome: 'deny', rule: 'day --front-end agent' });
    expect(evaluate(policy, spend('0.5', { frontEnd: '*' }))).toEqual({ outcome: 'allow' });
    expect(evaluate(policy, spend('0.5', { frontEnd: '*', kind: 'x402', host: 'api.example.com' }))).toMatchObject({ rule: 'per-send --front-end x402' });
  });

  it('says when a budget has room again for the spend refused: as the oldest spends of the window leave it; never for one above the budget', () => {
    const counted = [past('0.4', 20 * HOUR), past('0.3', 10 * HOUR), past('0.2', HOUR)];
    const refused = evaluate({ day: raw('1') }, spend('0.5'), counted);
    // 0.9 spent + 0.5 is 0.4 over: the 0.4 of 20 hours ago leaves the 24-hour window in 4 hours.
    expect(refused).toMatchObject({ outcome: 'deny', rule: 'day', remainingRaw: xnoToRaw('0.1'), retryAtMs: NOW + 4 * HOUR });
    expect(evaluate({ day: raw('1') }, spend('0.8'), counted)).toMatchObject({ retryAtMs: NOW - 10 * HOUR + 24 * HOUR });
    expect(evaluate({ day: raw('1') }, spend('1.5'), counted).retryAtMs).toBeUndefined();
  });

  it("tells a refused caller what is left and when, never how to change the policy (the caller may be an agent)", () => {
    for (const verdict of [
      evaluate({ day: raw('1') }, spend('0.5'), [past('0.9', HOUR)]),
      evaluate({ perSend: raw('0.1') }, spend('0.5')),
      evaluate({ deny: { recipients: [alice] } }, spend('0.5')),
      evaluate({ hour: raw('0.1') }, spend('0.5')),
    ]) {
      const error = denial(verdict);
      expect(`${error.message} ${error.hint}`).not.toMatch(/policy (set|unset|seal)|config set|--front-end \w+ <XNO>/);
      expect(error.details).toMatchObject({ rule: verdict.rule, remaining: expect.any(String) });
    }
    expect(denial(evaluate({ day: raw('1') }, spend('0.5'), [past('0.9', HOUR)])).details).toMatchObject({ retry_at: new Date(NOW - HOUR + 24 * HOUR).toISOString() });
  });
});
