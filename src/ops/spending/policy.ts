import { normalizeAddress, rawToXno } from '../../nano/index.js';
import type { ProfileRecord, RuleLimits, SpendingPolicy } from '../../wallet/config.js';
import { hostMatches } from './hosts.js';

/** Who asked for a spend: set by the process that serves the caller, never by what the caller sends. */
const FRONT_ENDS = ['cli', 'toolset', 'mcp', 'agent', 'sdk'] as const;
export type FrontEnd = (typeof FRONT_ENDS)[number];
/** Front ends a rule can name: each of them, and x402 for every x402 payment, whoever fetched. */
export const RULE_FRONT_ENDS = [...FRONT_ENDS, 'x402'] as const;
/**
 * Who a spend is judged as: a front end, or every one at once ('*', an
 * unlocked session granted to no one front end): then the rules of every
 * front end apply to it (x402's stay with x402 payments).
 */
export type JudgedAs = FrontEnd | '*';
/** The scopes `nanopay unlock --scope` grants: one front end, or all (every front end's rules at once). */
export const SESSION_SCOPES = [...FRONT_ENDS, 'all'] as const;
export type SessionScope = (typeof SESSION_SCOPES)[number];
export const judgedAs = (scope: SessionScope): JudgedAs => (scope === 'all' ? '*' : scope);

/** What a spend pays for; a representative change is no spend. */
export type SpendKind = 'send' | 'donate' | 'topup' | 'x402' | 'refund' | 'sweep';

const WINDOWS = { hour: 60 * 60_000, day: 24 * 60 * 60_000, month: 30 * 24 * 60 * 60_000 } as const;
type Window = keyof typeof WINDOWS;
const WINDOW_NAMES: Record<Window, [rule: string, said: string]> = { hour: ['hour', 'the last hour'], day: ['day', 'the last 24 hours'], month: ['30d', 'the last 30 days'] };

/** The spend being decided. */
export interface SpendFacts {
  frontEnd: JudgedAs;
  kind: SpendKind;
  /** The recipient's address. */
  to: string;
  /** The host an x402 payment pays (hostOfUrl: the request's, never the seller's word), absent when the client did not say. */
  host?: string;
  amountRaw: bigint;
  at: number;
}

/** A spend that counts toward budgets: landed, or signed and not known to be dropped or cancelled. */
export interface CountedSpend {
  to: string;
  host?: string;
  frontEnd: string;
  kind: string;
  amountRaw: bigint;
  at: number;
  /** Made with a person's yes (an approval, or the terminal): it does not count toward ask-above-hour. */
  attended: boolean;
}

export interface Verdict {
  outcome: 'allow' | 'deny' | 'ask';
  /** The rule that decided, written as `nanopay policy set` takes it ("day", "per-send --front-end x402"). */
  rule?: string;
  message?: string;
  limitRaw?: bigint;
  /** What the rule still leaves: a budget's remainder, a per-send maximum itself, 0 for a list. */
  remainingRaw?: bigint;
  /** A budget's refusal: when enough of the window's spends have rolled out of it for this spend to fit (never, for one above the budget itself). */
  retryAtMs?: number;
}

/**
 * The profile's policy, with the settings of versions before it read as its
 * rules, so an existing profile keeps its meaning: limit-per-send is per-send,
 * limit-per-day the day budget, x402-max the per-send maximum of x402 payments.
 */
export function profilePolicy(profile: ProfileRecord): SpendingPolicy {
  const policy = structuredClone(profile.policy ?? {});
  if (profile.limits?.perSend !== undefined) policy.perSend ??= profile.limits.perSend;
  if (profile.limits?.perDay !== undefined) policy.day ??= profile.limits.perDay;
  if (profile.x402Max !== undefined) {
    policy.frontEnds ??= {};
    policy.frontEnds.x402 = { perSend: profile.x402Max, ...policy.frontEnds.x402 };
  }
  return policy;
}

const LIMIT_KEYS = ['perSend', 'hour', 'day', 'month', 'askAbove', 'askAboveHour'] as const satisfies readonly (keyof RuleLimits)[];

function stricterLimits(a: RuleLimits | undefined, b: RuleLimits | undefined): RuleLimits | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const out: RuleLimits = { ...a };
  for (const key of LIMIT_KEYS) {
    const x = a[key];
    const y = b[key];
    if (y !== undefined && (x === undefined || BigInt(y) < BigInt(x))) out[key] = y;
  }
  return out;
}

function stricterMap(a: Record<string, RuleLimits> | undefined, b: Record<string, RuleLimits> | undefined): Record<string, RuleLimits> | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const out = { ...a };
  for (const [key, limits] of Object.entries(b)) out[key] = stricterLimits(out[key], limits) as RuleLimits;
  return out;
}

/** Both policies at once: every rule of either holds, the stricter where both set one (a process adds rules, never lifts one). */
export function stricter(a: SpendingPolicy, b: SpendingPolicy): SpendingPolicy {
  const lists = (x?: string[], y?: string[]): string[] | undefined => (x === undefined && y === undefined ? undefined : [...new Set([...(x ?? []), ...(y ?? [])])]);
  const allowOf = (x?: string[], y?: string[]): string[] | undefined => (x === undefined || y === undefined ? (x ?? y) : x.filter((v) => y.includes(v)));
  const recipients = stricterMap(a.recipients, b.recipients);
  const hosts = stricterMap(a.hosts, b.hosts);
  const frontEnds = stricterMap(a.frontEnds, b.frontEnds);
  const allowRecipients = allowOf(a.allow?.recipients, b.allow?.recipients);
  const allowHosts = allowOf(a.allow?.hosts, b.allow?.hosts);
  const denyRecipients = lists(a.deny?.recipients, b.deny?.recipients);
  const denyHosts = lists(a.deny?.hosts, b.deny?.hosts);
  const ttl = a.approvalTtlS === undefined || b.approvalTtlS === undefined ? (a.approvalTtlS ?? b.approvalTtlS) : Math.min(a.approvalTtlS, b.approvalTtlS);
  return {
    ...stricterLimits(a, b),
    ...(recipients === undefined ? {} : { recipients }),
    ...(hosts === undefined ? {} : { hosts }),
    ...(frontEnds === undefined ? {} : { frontEnds }),
    ...(allowRecipients === undefined && allowHosts === undefined ? {} : { allow: { ...(allowRecipients && { recipients: allowRecipients }), ...(allowHosts && { hosts: allowHosts }) } }),
    ...(denyRecipients === undefined && denyHosts === undefined ? {} : { deny: { ...(denyRecipients && { recipients: denyRecipients }), ...(denyHosts && { hosts: denyHosts }) } }),
    ...(ttl === undefined ? {} : { approvalTtlS: ttl }),
  };
}

/** A recipient rule's key as an address: itself, or the address of the contact it names (undefined for an unknown contact: it names no one). */
function recipientOf(key: string, contacts: Record<string, string>): string | undefined {
  if (key.startsWith('@')) return contacts[key.slice(1).toLowerCase()];
  try {
    return normalizeAddress(key);
  } catch {
    return undefined;
  }
}

interface Scope {
  /** The flag that names the scope in a rule, empty for the whole profile. */
  flag: string;
  limits: RuleLimits;
  has(spend: { to: string; host?: string; frontEnd: string; kind: string }): boolean;
}

function scopes(policy: SpendingPolicy, contacts: Record<string, string>): Scope[] {
  const out: Scope[] = [{ flag: '', limits: policy, has: () => true }];
  for (const [key, limits] of Object.entries(policy.recipients ?? {})) {
    const address = recipientOf(key, contacts);
    out.push({ flag: ` --recipient ${key}`, limits, has: (s) => address !== undefined && s.to === address });
  }
  for (const [key, limits] of Object.entries(policy.hosts ?? {})) out.push({ flag: ` --host ${key}`, limits, has: (s) => s.host !== undefined && hostMatches(key, s.host) });
  for (const [key, limits] of Object.entries(policy.frontEnds ?? {})) {
    out.push({ flag: ` --front-end ${key}`, limits, has: (s) => s.frontEnd === key || (key === 'x402' ? s.kind === 'x402' : s.frontEnd === '*') });
  }
  return out;
}

const xno = (raw: bigint): string => `${rawToXno(raw)} XNO`;

function what(spend: SpendFacts): string {
  const to = spend.host === undefined ? spend.to : `${spend.host} (${spend.to})`;
  return `${{ send: 'The send', donate: 'The donation', topup: 'The top-up', x402: 'The x402 payment', refund: 'The refund', sweep: 'The sweep' }[spend.kind]} of ${xno(spend.amountRaw)} to ${to}`;
}

function listed(list: string[] | undefined, spend: SpendFacts, contacts: Record<string, string>, kind: 'recipients' | 'hosts'): boolean {
  return (list ?? []).some((key) => (kind === 'hosts' ? spend.host !== undefined && hostMatches(key, spend.host) : recipientOf(key, contacts) === spend.to));
}

/** The rule named by a refusal of an x402 payment whose host is not known while host rules exist. */
export const UNKNOWN_HOST_RULE = 'host unknown';

function hasHostRules(policy: SpendingPolicy): boolean {
  return Object.keys(policy.hosts ?? {}).length > 0 || (policy.allow?.hosts?.length ?? 0) > 0 || (policy.deny?.hosts?.length ?? 0) > 0;
}

/** The allow and deny lists: recipients for every spend, hosts for x402 payments (a send has no host). */
function lists(policy: SpendingPolicy, spend: SpendFacts, contacts: Record<string, string>): Verdict | undefined {
  for (const kind of ['recipients', 'hosts'] as const) {
    const flag = kind === 'recipients' ? '--recipient' : '--host';
    const subject = kind === 'recipients' ? spend.to : spend.host;
    if (subject === undefined) continue;
    if (listed(policy.deny?.[kind], spend, contacts, kind)) {
      return { outcome: 'deny', rule: `deny ${flag}`, remainingRaw: 0n, message: `${what(spend)} is refused: ${subject} is on the deny list of ${kind}` };
    }
    const allow = policy.allow?.[kind];
    if (allow !== undefined && allow.length > 0 && !listed(allow, spend, contacts, kind)) {
      return { outcome: 'deny', rule: `allow ${flag}`, remainingRaw: 0n, message: `${what(spend)} is refused: ${subject} is not on the allow list of ${kind}` };
    }
  }
  return undefined;
}

const sum = (spends: CountedSpend[]): bigint => spends.reduce((total, s) => total + s.amountRaw, 0n);

/** When the oldest spends of a window have rolled out of it enough to free `needed`: undefined when the spend can never fit (it is above the budget). */
function roomComesBack(within: CountedSpend[], needed: bigint, fits: boolean, windowMs: number): number | undefined {
  if (!fits) return undefined;
  let freed = 0n;
  for (const spend of [...within].sort((a, b) => a.at - b.at)) {
    freed += spend.amountRaw;
    if (freed >= needed) return spend.at + windowMs;
  }
  return undefined;
}

/**
 * Decides a spend against the policy and the spends that count (the
 * profile's, all accounts together, landed or in flight). Refusals come
 * first: the deny and allow lists, then every per-send maximum and budget of
 * every scope the spend is in (the whole profile, its recipient, its host, its
 * front end); then the "ask above" rules, which a person's yes lifts (and
 * nothing else). A budget counts the spends within its window, this one
 * included: it is refused when that total would pass the budget.
 */
export function evaluate(policy: SpendingPolicy, spend: SpendFacts, counted: CountedSpend[] = [], contacts: Record<string, string> = {}): Verdict {
  if (spend.kind === 'x402' && spend.host === undefined && hasHostRules(policy)) {
    // Host rules judge only a known host: a payment whose client did not say which URL it requested fails closed.
    return { outcome: 'deny', rule: UNKNOWN_HOST_RULE, remainingRaw: 0n, message: `${what(spend)} is refused: its client did not say which host it requested, and the policy has host rules` };
  }
  const listedVerdict = lists(policy, spend, contacts);
  if (listedVerdict !== undefined) return listedVerdict;
  const mine = scopes(policy, contacts).filter((scope) => scope.has(spend));
  for (const scope of mine) {
    const max = scope.limits.perSend;
    if (max !== undefined && spend.amountRaw > BigInt(max)) {
      return { outcome: 'deny', rule: `per-send${scope.flag}`, limitRaw: BigInt(max), remainingRaw: BigInt(max), message: `${what(spend)} is over the per-send maximum of ${xno(BigInt(max))}` };
    }
  }
  for (const scope of mine) {
    for (const window of Object.keys(WINDOWS) as Window[]) {
      const budget = scope.limits[window];
      if (budget === undefined) continue;
      const within = counted.filter((c) => c.at > spend.at - WINDOWS[window] && scope.has(c));
      const spent = sum(within);
      if (spent + spend.amountRaw > BigInt(budget)) {
        const left = BigInt(budget) > spent ? BigInt(budget) - spent : 0n;
        const [rule, said] = WINDOW_NAMES[window];
        const retryAtMs = roomComesBack(within, spent + spend.amountRaw - BigInt(budget), spend.amountRaw <= BigInt(budget), WINDOWS[window]);
        return {
          outcome: 'deny',
          rule: `${rule}${scope.flag}`,
          limitRaw: BigInt(budget),
          remainingRaw: left,
          ...(retryAtMs === undefined ? {} : { retryAtMs }),
          message: `${what(spend)} would bring ${said} to ${xno(spent + spend.amountRaw)}, over the budget of ${xno(BigInt(budget))} (${xno(left)} left)`,
        };
      }
    }
  }
  for (const scope of mine) {
    const above = scope.limits.askAbove;
    if (above !== undefined && spend.amountRaw > BigInt(above)) {
      return { outcome: 'ask', rule: `ask-above${scope.flag}`, limitRaw: BigInt(above), message: `${what(spend)} is above the ask-above amount of ${xno(BigInt(above))}` };
    }
    const hourly = scope.limits.askAboveHour;
    if (hourly === undefined) continue;
    const unattended = sum(counted.filter((c) => !c.attended && c.at > spend.at - WINDOWS.hour && scope.has(c)));
    if (unattended + spend.amountRaw > BigInt(hourly)) {
      return {
        outcome: 'ask',
        rule: `ask-above-hour${scope.flag}`,
        limitRaw: BigInt(hourly),
        remainingRaw: BigInt(hourly) > unattended ? BigInt(hourly) - unattended : 0n,
        message:
          unattended === 0n
            ? `${what(spend)} is above the ask-above-hour amount of ${xno(BigInt(hourly))}`
            : `${what(spend)} would bring the spending without approval in the last hour to ${xno(unattended + spend.amountRaw)}, above the ask-above-hour amount of ${xno(BigInt(hourly))}`,
      };
    }
  }
  return { outcome: 'allow' };
}

/** The longest window any budget of the policy looks back over (what must be read of past spends). */
export function lookback(policy: SpendingPolicy): number {
  const all = [policy, ...Object.values(policy.recipients ?? {}), ...Object.values(policy.hosts ?? {}), ...Object.values(policy.frontEnds ?? {})];
  let ms = 0;
  for (const limits of all) {
    for (const window of Object.keys(WINDOWS) as Window[]) if (limits[window] !== undefined) ms = Math.max(ms, WINDOWS[window]);
    if (limits.askAboveHour !== undefined) ms = Math.max(ms, WINDOWS.hour);
  }
  return ms;
}

/** One rule as it stands for the caller: its limit, what the window holds, what is left and when room comes back. */
export interface RuleStanding {
  /** As `policy set` takes it ("day --front-end mcp"). */
  rule: string;
  kind: 'per-send' | 'budget' | 'ask-above' | 'ask-above-hour';
  limitRaw: bigint;
  /** A budget's (and ask-above-hour's): what counts in its window now. */
  spentRaw?: bigint;
  remainingRaw?: bigint;
  /** When the oldest spend in the window leaves it, giving room back (none while nothing is spent). */
  roomBackAtMs?: number;
}

/**
 * Every amount rule that applies to spends judged as `frontEnd`, with what it
 * leaves now: the profile's, the front end's (every front end's for '*'),
 * x402's, and each recipient's and host's (for spends to them).
 */
export function standing(policy: SpendingPolicy, frontEnd: JudgedAs, counted: CountedSpend[], contacts: Record<string, string>, now: number): RuleStanding[] {
  const out: RuleStanding[] = [];
  const mine = scopes(policy, contacts).filter((scope) => !scope.flag.startsWith(' --front-end ') || scope.flag === ' --front-end x402' || frontEnd === '*' || scope.flag === ` --front-end ${frontEnd}`);
  for (const scope of mine) {
    const { limits } = scope;
    if (limits.perSend !== undefined) out.push({ rule: `per-send${scope.flag}`, kind: 'per-send', limitRaw: BigInt(limits.perSend) });
    if (limits.askAbove !== undefined) out.push({ rule: `ask-above${scope.flag}`, kind: 'ask-above', limitRaw: BigInt(limits.askAbove) });
    const windows: [Window | 'askAboveHour', string | undefined][] = [...(Object.keys(WINDOWS) as Window[]).map((w) => [w, limits[w]] as [Window, string | undefined]), ['askAboveHour', limits.askAboveHour]];
    for (const [window, limit] of windows) {
      if (limit === undefined) continue;
      const ms = window === 'askAboveHour' ? WINDOWS.hour : WINDOWS[window];
      const within = counted.filter((c) => c.at > now - ms && scope.has(c) && (window !== 'askAboveHour' || !c.attended));
      const spent = sum(within);
      const oldest = within.reduce<number | undefined>((first, c) => (first === undefined || c.at < first ? c.at : first), undefined);
      out.push({
        rule: `${window === 'askAboveHour' ? 'ask-above-hour' : WINDOW_NAMES[window][0]}${scope.flag}`,
        kind: window === 'askAboveHour' ? 'ask-above-hour' : 'budget',
        limitRaw: BigInt(limit),
        spentRaw: spent,
        remainingRaw: BigInt(limit) > spent ? BigInt(limit) - spent : 0n,
        ...(oldest === undefined ? {} : { roomBackAtMs: oldest + ms }),
      });
    }
  }
  return out;
}
