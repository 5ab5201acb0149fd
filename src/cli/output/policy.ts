import type { PolicyDocument } from '../../ops/spending/policy-edit.js';

const SAID: Record<string, string> = {
  'per-send': 'at most per spend',
  hour: 'budget over the last hour',
  day: 'budget over the last 24 hours',
  '30d': 'budget over the last 30 days',
  'ask-above': 'a person approves a spend above',
  'ask-above-hour': 'a person approves once the last hour without approval passes',
};

function limits(prefix: string, doc: Record<string, string>): string[] {
  return Object.entries(doc).map(([rule, xno]) => `  ${rule}${prefix}: ${xno} XNO (${SAID[rule] ?? rule})`);
}

/** The policy's rules, a line each, written as `policy set` takes them. */
export function policyLines(policy: PolicyDocument): string[] {
  const out: string[] = [];
  const { recipients, hosts, 'front-ends': frontEnds, allow, deny, 'approval-ttl': ttl, ...own } = policy as Record<string, never>;
  out.push(...limits('', own));
  for (const [flag, map] of [['--recipient', recipients], ['--host', hosts], ['--front-end', frontEnds]] as const) {
    for (const [key, rules] of Object.entries((map ?? {}) as Record<string, Record<string, string>>)) out.push(...limits(` ${flag} ${key}`, rules));
  }
  for (const [name, lists] of [['allow', allow], ['deny', deny]] as const) {
    const l = (lists ?? {}) as { recipients?: string[]; hosts?: string[] };
    if ((l.recipients?.length ?? 0) > 0) out.push(`  ${name} --recipient: ${l.recipients?.join(', ')}`);
    if ((l.hosts?.length ?? 0) > 0) out.push(`  ${name} --host: ${l.hosts?.join(', ')}`);
  }
  if (ttl !== undefined) out.push(`  approval-ttl: ${String(ttl)} (how long an approval waits)`);
  return out.length === 0 ? ['  (no rules: every spend is allowed)'] : out;
}
