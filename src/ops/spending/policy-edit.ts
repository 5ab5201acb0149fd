import { NanoPayError } from '../../errors.js';
import { normalizeAddress, rawToXno, xnoToRaw } from '../../nano/index.js';
import type { ProfileRecord, RuleLimits, SpendingPolicy } from '../../wallet/config.js';
import { formatDuration, parseDuration } from '../duration.js';
import type { Session } from '../session.js';
import { hostRule } from './hosts.js';
import { profilePolicy, RULE_FRONT_ENDS } from './policy.js';
import { policySealHolds, policyTampered, sealProfile } from './seal.js';
import { recordAct, withPasswordFor } from './audit.js';

/** Amount rules, as `policy set` and the JSON form name them. */
const AMOUNT_RULES = { 'per-send': 'perSend', hour: 'hour', day: 'day', '30d': 'month', 'ask-above': 'askAbove', 'ask-above-hour': 'askAboveHour' } as const satisfies Record<string, keyof RuleLimits>;
type AmountRule = keyof typeof AMOUNT_RULES;
export const POLICY_RULES = [...Object.keys(AMOUNT_RULES), 'allow', 'deny', 'approval-ttl'] as const;

/** The longest an approval may wait. */
const MAX_TTL_S = 30 * 24 * 60 * 60;

/** Which part of the policy a rule is about: the whole profile, a recipient, a host, or a front end. */
export interface RuleScope {
  recipient?: string;
  host?: string;
  frontEnd?: string;
}

/** The policy as people and scripts write it (`policy show --json`, `policy set --from`): amounts in XNO, rule names as `policy set` takes them. */
export type PolicyDocument = Record<string, unknown>;

function limitsDocument(limits: RuleLimits): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, key] of Object.entries(AMOUNT_RULES)) {
    const raw = limits[key];
    if (raw !== undefined) out[name] = rawToXno(BigInt(raw));
  }
  return out;
}

export function policyDocument(policy: SpendingPolicy): PolicyDocument {
  const scoped = (map: Record<string, RuleLimits> | undefined) => (map === undefined || Object.keys(map).length === 0 ? undefined : Object.fromEntries(Object.entries(map).map(([k, v]) => [k, limitsDocument(v)])));
  const lists = (l: SpendingPolicy['allow']) => (l === undefined || (l.recipients?.length ?? 0) + (l.hosts?.length ?? 0) === 0 ? undefined : l);
  const parts: PolicyDocument = {
    ...limitsDocument(policy),
    recipients: scoped(policy.recipients),
    hosts: scoped(policy.hosts),
    'front-ends': scoped(policy.frontEnds),
    allow: lists(policy.allow),
    deny: lists(policy.deny),
    'approval-ttl': policy.approvalTtlS === undefined ? undefined : formatDuration(policy.approvalTtlS),
  };
  return Object.fromEntries(Object.entries(parts).filter(([, v]) => v !== undefined));
}

function recipientKey(key: string): string {
  if (!key.startsWith('@')) return normalizeAddress(key);
  const name = key.slice(1).toLowerCase();
  if (!/^[a-z0-9][a-z0-9._-]{0,31}$/.test(name)) throw new NanoPayError('INVALID_CONTACT_NAME', `"${key}" is not a contact name`);
  return `@${name}`;
}

function frontEndKey(key: string): string {
  if (!(RULE_FRONT_ENDS as readonly string[]).includes(key)) throw new NanoPayError('INVALID_REQUEST', `"${key}" is not a front end: ${RULE_FRONT_ENDS.join(', ')}`);
  return key;
}

function amount(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new NanoPayError('INVALID_REQUEST', `${what} must be an amount in XNO as a string, such as "0.5"`);
  return xnoToRaw(value).toString();
}

function limitsFrom(doc: unknown, where: string): RuleLimits {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new NanoPayError('INVALID_REQUEST', `${where} must be an object of rules`);
  const out: RuleLimits = {};
  for (const [name, value] of Object.entries(doc)) {
    const key = AMOUNT_RULES[name as AmountRule];
    if (key === undefined) throw new NanoPayError('INVALID_REQUEST', `${where} has no rule "${name}"; its rules: ${Object.keys(AMOUNT_RULES).join(', ')}`);
    out[key] = amount(value, `${where} ${name}`);
  }
  return out;
}

function scopedFrom(doc: unknown, where: string, key: (k: string) => string): Record<string, RuleLimits> {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new NanoPayError('INVALID_REQUEST', `"${where}" must be an object`);
  return Object.fromEntries(Object.entries(doc).map(([k, v]) => [key(k), limitsFrom(v, `${where}.${k}`)]));
}

function listsFrom(doc: unknown, where: string): { recipients?: string[]; hosts?: string[] } {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new NanoPayError('INVALID_REQUEST', `"${where}" must be {"recipients": [...], "hosts": [...]}`);
  const out: { recipients?: string[]; hosts?: string[] } = {};
  for (const [name, values] of Object.entries(doc)) {
    if ((name !== 'recipients' && name !== 'hosts') || !Array.isArray(values) || !values.every((v) => typeof v === 'string')) {
      throw new NanoPayError('INVALID_REQUEST', `"${where}" takes "recipients" and "hosts", each a list of strings`);
    }
    out[name] = [...new Set((values as string[]).map(name === 'recipients' ? recipientKey : hostRule))];
  }
  return out;
}

/** The policy a JSON document states (its whole form: what it leaves out is not a rule). */
function policyFromDocument(doc: unknown): SpendingPolicy {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new NanoPayError('INVALID_REQUEST', 'The policy must be a JSON object');
  const { recipients, hosts, 'front-ends': frontEnds, allow, deny, 'approval-ttl': ttl, ...limits } = doc as Record<string, unknown>;
  return {
    ...limitsFrom(limits, 'the policy'),
    ...(recipients === undefined ? {} : { recipients: scopedFrom(recipients, 'recipients', recipientKey) }),
    ...(hosts === undefined ? {} : { hosts: scopedFrom(hosts, 'hosts', hostRule) }),
    ...(frontEnds === undefined ? {} : { frontEnds: scopedFrom(frontEnds, 'front-ends', frontEndKey) }),
    ...(allow === undefined ? {} : { allow: listsFrom(allow, 'allow') }),
    ...(deny === undefined ? {} : { deny: listsFrom(deny, 'deny') }),
    ...(ttl === undefined ? {} : { approvalTtlS: parseDuration(String(ttl), { max: MAX_TTL_S, what: 'approval-ttl' }) }),
  };
}

/** A profile with its policy changed: the settings of versions before it are folded in, and gone. */
function withPolicy(profile: ProfileRecord, change: (policy: SpendingPolicy) => SpendingPolicy): ProfileRecord {
  const { limits: _limits, x402Max: _x402Max, ...rest } = profile;
  return { ...rest, policy: change(profilePolicy(profile)) };
}

function scopeOf(scope: RuleScope): { map: 'recipients' | 'hosts' | 'frontEnds'; key: string } | undefined {
  const given = [scope.recipient, scope.host, scope.frontEnd].filter((v) => v !== undefined).length;
  if (given > 1) throw new NanoPayError('USAGE', 'A rule is about one of --recipient, --host or --front-end, not several');
  if (scope.recipient !== undefined) return { map: 'recipients', key: recipientKey(scope.recipient) };
  if (scope.host !== undefined) return { map: 'hosts', key: hostRule(scope.host) };
  if (scope.frontEnd !== undefined) return { map: 'frontEnds', key: frontEndKey(scope.frontEnd) };
  return undefined;
}

/** Sets (or, with `value` undefined, removes) one amount rule in a scope. */
function setLimit(policy: SpendingPolicy, rule: AmountRule, value: string | undefined, scope: RuleScope): SpendingPolicy {
  const key = AMOUNT_RULES[rule];
  const apply = (limits: RuleLimits): RuleLimits => {
    const { [key]: _old, ...rest } = limits;
    return value === undefined ? rest : { ...rest, [key]: value };
  };
  const where = scopeOf(scope);
  if (where === undefined) return apply(policy);
  const map = { ...policy[where.map] };
  const next = apply(map[where.key] ?? {});
  if (Object.keys(next).length === 0) delete map[where.key];
  else map[where.key] = next;
  return { ...policy, [where.map]: map };
}

function setListed(policy: SpendingPolicy, list: 'allow' | 'deny', scope: RuleScope, add: boolean): SpendingPolicy {
  const where = scopeOf(scope);
  if (where === undefined || where.map === 'frontEnds') throw new NanoPayError('USAGE', `${list} takes --recipient ADDRESS|@NAME or --host HOST`);
  const kind = where.map;
  const current = policy[list]?.[kind] ?? [];
  const next = add ? [...new Set([...current, where.key])] : current.filter((v) => v !== where.key);
  return { ...policy, [list]: { ...policy[list], [kind]: next } };
}

function checkRule(rule: string): void {
  if (!(POLICY_RULES as readonly string[]).includes(rule)) throw new NanoPayError('USAGE', `Unknown rule "${rule}"; the rules: ${POLICY_RULES.join(', ')}`);
}

/** The profile's policy, as its JSON document. */
export function showPolicy(session: Session): { profile: string; policy: PolicyDocument } {
  return { profile: session.profileName, policy: policyDocument(profilePolicy(session.profile())) };
}

/** A change of the policy as `policy set|unset|seal` names it, for the audit trail ("set day 1", "unset ask-above --front-end mcp"). */
function changeLabel(verb: string, rule: string, value: string | undefined, scope: RuleScope): string {
  const where = scopeOf(scope);
  const flag = where === undefined ? '' : ` --${{ recipients: 'recipient', hosts: 'host', frontEnds: 'front-end' }[where.map]} ${where.key}`;
  return `${verb} ${rule}${value === undefined ? '' : ` ${value}`}${flag}`;
}

/**
 * Changes the profile's policy: only with the key store password (asked for,
 * never taken from an unlocked session), sealed anew with its seal key, and
 * recorded in the audit trail with what it was and what it became. A refusal
 * (no password, a wrong one) is recorded too. A policy that no longer matches
 * its seal is not changed rule by rule, which would seal the rest unseen: it
 * is replaced whole (`whole`: set --from) or sealed as it stands once a person
 * checked it (policy seal).
 */
export async function changePolicy(session: Session, label: string, change: (profile: ProfileRecord) => ProfileRecord, whole = false): Promise<{ profile: string; policy: PolicyDocument }> {
  const shared = session.profile().sessionSocket;
  if (shared !== undefined) {
    throw new NanoPayError('USAGE', `Profile "${session.profileName}" signs through the session shared at ${shared}: its spends are judged by the policy of that session's owner, which only they change`, {
      hint: 'Ask the owner of the keys; this profile has no policy of its own.',
    });
  }
  const keystore = await withPasswordFor(session, { kind: 'policy', rule: label }, () => session.keystore('create'));
  const key = keystore.sealKey();
  const contacts = Object.fromEntries(Object.entries(await session.contacts.all()).map(([name, c]) => [name, c.address]));
  let before: PolicyDocument = {};
  const next = session.updateProfile((p) => {
    const name = session.profileName;
    if (!whole && Object.keys(p.wallets).length > 0 && !policySealHolds(key, name, p)) throw policyTampered(name, p);
    before = policyDocument(profilePolicy(p));
    return sealProfile(key, name, change(p), contacts);
  });
  const after = policyDocument(profilePolicy(next));
  await recordAct(session, { kind: 'policy', decision: 'policy_changed', rule: label, message: `${label}, with ${session.passwordVia()}`, via: session.passwordVia(), before, after });
  return { profile: session.profileName, policy: after };
}

/** `policy set RULE VALUE [scope]`: an amount in XNO, a duration for approval-ttl; allow and deny add the scope's recipient or host to their list. */
export async function setPolicyRule(session: Session, rule: string, value: string | undefined, scope: RuleScope): Promise<{ profile: string; policy: PolicyDocument }> {
  checkRule(rule);
  const contacts = await session.contacts.all();
  if (scope.recipient?.startsWith('@') === true && contacts[scope.recipient.slice(1).toLowerCase()] === undefined) {
    throw new NanoPayError('NOT_FOUND', `There is no contact ${scope.recipient}`, { hint: 'Add it first (nanopay contacts add NAME ADDRESS), or name the address.' });
  }
  const apply = (policy: SpendingPolicy): SpendingPolicy => {
    if (rule === 'allow' || rule === 'deny') return setListed(policy, rule, scope, true);
    if (value === undefined) throw new NanoPayError('USAGE', `Give a value for ${rule}`);
    if (rule === 'approval-ttl') {
      if (scopeOf(scope) !== undefined) throw new NanoPayError('USAGE', 'approval-ttl is the profile\'s, for every approval');
      return { ...policy, approvalTtlS: parseDuration(value, { max: MAX_TTL_S, what: 'approval-ttl' }) };
    }
    return setLimit(policy, rule as AmountRule, xnoToRaw(value).toString(), scope);
  };
  // Checked before the password is asked: a mistyped rule costs no unlock.
  apply(profilePolicy(session.profile()));
  return changePolicy(session, changeLabel('set', rule, value, scope), (p) => withPolicy(p, apply));
}

/** `policy unset RULE [scope]`: removes the rule (from allow and deny: the scope's recipient or host). */
export async function unsetPolicyRule(session: Session, rule: string, scope: RuleScope): Promise<{ profile: string; policy: PolicyDocument }> {
  checkRule(rule);
  const apply = (policy: SpendingPolicy): SpendingPolicy => {
    if (rule === 'allow' || rule === 'deny') return setListed(policy, rule, scope, false);
    if (rule === 'approval-ttl') {
      const { approvalTtlS: _ttl, ...rest } = policy;
      return rest;
    }
    return setLimit(policy, rule as AmountRule, undefined, scope);
  };
  apply(profilePolicy(session.profile()));
  return changePolicy(session, changeLabel('unset', rule, undefined, scope), (p) => withPolicy(p, apply));
}

/** `policy set --from`: the whole policy replaced by a JSON document (checked whole before anything changes). */
export async function replacePolicy(session: Session, doc: unknown): Promise<{ profile: string; policy: PolicyDocument }> {
  const policy = policyFromDocument(doc);
  return changePolicy(session, 'set --from', (p) => withPolicy(p, () => policy), true);
}

/** `policy seal`: the policy as it stands (a person checked it), sealed with the password; the contacts it names are taken as they are now. */
export async function sealPolicy(session: Session): Promise<{ profile: string; policy: PolicyDocument }> {
  return changePolicy(session, 'seal', (p) => p, true);
}

/** The settings of versions before the policy, read and written as its rules. */
const LEGACY_RULES = {
  'limit-per-send': { rule: 'per-send', scope: {} },
  'limit-per-day': { rule: 'day', scope: {} },
  'x402-max': { rule: 'per-send', scope: { frontEnd: 'x402' } },
} as const satisfies Record<string, { rule: AmountRule; scope: RuleScope }>;

/** The value of a legacy setting, in XNO, from the policy. */
export function legacyRule(profile: ProfileRecord, name: keyof typeof LEGACY_RULES): string | undefined {
  const { rule, scope } = LEGACY_RULES[name];
  const policy = profilePolicy(profile);
  const limits = 'frontEnd' in scope ? policy.frontEnds?.[scope.frontEnd] : policy;
  const raw = limits?.[AMOUNT_RULES[rule]];
  return raw === undefined ? undefined : rawToXno(BigInt(raw));
}

/** A profile with a legacy setting changed (an amount in XNO) or removed, as the policy rule it is. */
export function setLegacyRule(profile: ProfileRecord, name: keyof typeof LEGACY_RULES, value: string | undefined): ProfileRecord {
  const { rule, scope } = LEGACY_RULES[name];
  return withPolicy(profile, (policy) => setLimit(policy, rule, value === undefined ? undefined : xnoToRaw(value).toString(), scope));
}
