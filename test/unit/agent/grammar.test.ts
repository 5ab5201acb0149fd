import { describe, expect, it } from 'vitest';
import { Confirmations } from '../../../src/agent/confirmations.js';
import { parseSentence } from '../../../src/agent/grammar.js';

const addr = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

describe('the plain grammar', () => {
  it.each([
    ['balance', { kind: 'tool', name: 'wallet.balance', arguments: {} }],
    ['  Check  Balance. ', { kind: 'tool', name: 'wallet.balance', arguments: {} }],
    ['receive', { kind: 'tool', name: 'wallet.balance', arguments: { auto_receive_pending_blocks: true } }],
    [`send 0.1 to ${addr}`, { kind: 'tool', name: 'wallet.send', arguments: { recipient_address: addr, amount: '0.1' } }],
    [`Send 0.1 XNO to ${addr.replace('nano_', 'NANO_')}`, { kind: 'tool', name: 'wallet.send', arguments: { recipient_address: addr, amount: '0.1' } }],
    [`pay 3 to ${addr}`, { kind: 'tool', name: 'wallet.send', arguments: { recipient_address: addr, amount: '3' } }],
    ['request 2.5', { kind: 'tool', name: 'payment.request', arguments: { amount: '2.5' } }],
    ['status AbC-123', { kind: 'tool', name: 'payment.status', arguments: { transaction_id: 'AbC-123' } }],
    ['credits', { kind: 'tool', name: 'credits.get', arguments: {} }],
    ['top up 100', { kind: 'tool', name: 'credits.topup', arguments: { credits_amount: '100' } }],
    ['topup 500 credits', { kind: 'tool', name: 'credits.topup', arguments: { credits_amount: '500' } }],
    ['donate 0.01', { kind: 'tool', name: 'donate.send', arguments: { amount: '0.01' } }],
    ['help', { kind: 'help' }],
    ['confirm Tok_EN-1', { kind: 'confirm', token: 'Tok_EN-1' }],
    ['send everything to my friend', { kind: 'unknown' }],
    ['', { kind: 'unknown' }],
  ])('%s', (sentence, intent) => {
    expect(parseSentence(sentence)).toEqual(intent);
  });

  it('keeps amounts as typed: the tool decides whether they are valid', () => {
    expect(parseSentence(`send 1e3 to ${addr}`)).toMatchObject({ arguments: { amount: '1e3' } });
  });
});

describe('confirmation tokens', () => {
  const call = { name: 'wallet.send', arguments: { recipient_address: addr, amount: '5' } };

  it('are single-use and give back exactly the call they were issued for', () => {
    const confirmations = new Confirmations();
    const { token } = confirmations.issue(call);
    expect(token).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(confirmations.take(token)).toEqual(call);
    expect(confirmations.take(token)).toBeUndefined();
    expect(confirmations.take('made-up')).toBeUndefined();
  });

  it('are random and bound to one call each', () => {
    const confirmations = new Confirmations();
    const a = confirmations.issue(call).token;
    const b = confirmations.issue({ ...call, arguments: { ...call.arguments, amount: '6' } }).token;
    expect(a).not.toBe(b);
    expect(confirmations.take(b)?.arguments.amount).toBe('6');
    expect(confirmations.take(a)?.arguments.amount).toBe('5');
  });

  it('expire', () => {
    let now = 1_000;
    const confirmations = new Confirmations(60_000, () => now);
    const { token, expiresInS } = confirmations.issue(call);
    expect(expiresInS).toBe(60);
    now += 60_000;
    expect(confirmations.take(token)).toBeUndefined();
  });

  it('are not changed by a change to the arguments they were issued with', () => {
    const confirmations = new Confirmations();
    const args = { ...call.arguments };
    const { token } = confirmations.issue({ name: call.name, arguments: args });
    args.amount = '500';
    expect(confirmations.take(token)?.arguments.amount).toBe('5');
  });
});
