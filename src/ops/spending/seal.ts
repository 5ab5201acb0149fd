import { createHmac, timingSafeEqual } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import type { ProfileRecord, SpendingPolicy } from '../../wallet/config.js';
import { profilePolicy } from './policy.js';

/**
 * Seals: what only the key store password may write, authenticated by the key
 * store's seal key (HMAC-SHA256, one domain per purpose), so a change made by
 * any other means (an edited config file, a row changed in the store) is
 * detected. The key opens only with the password; an unlocked session holds it
 * to check seals, and never makes one.
 */

/** JSON with object keys sorted at every depth: one text for one value. */
export function canonicalJson(value: unknown): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : typeof v === 'object' && v !== null
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
        : v;
  return JSON.stringify(canonical(value));
}

export type SealPurpose = 'policy' | 'approval';

export function sealOf(key: Buffer, purpose: SealPurpose, value: unknown): string {
  return createHmac('sha256', key).update(`nanopay ${purpose} seal v1\0`).update(canonicalJson(value)).digest('hex');
}

export function sealHolds(key: Buffer, purpose: SealPurpose, value: unknown, seal: string | undefined): boolean {
  if (typeof seal !== 'string' || !/^[0-9a-f]{64}$/.test(seal)) return false;
  return timingSafeEqual(Buffer.from(sealOf(key, purpose, value), 'hex'), Buffer.from(seal, 'hex'));
}

/** The contact names a policy's rules use (@name), lower case. */
function namedContacts(policy: SpendingPolicy): string[] {
  const keys = [...Object.keys(policy.recipients ?? {}), ...(policy.allow?.recipients ?? []), ...(policy.deny?.recipients ?? [])];
  return [...new Set(keys.filter((k) => k.startsWith('@')).map((k) => k.slice(1).toLowerCase()))].sort();
}

/** What a profile's seal covers: its name, the policy in force (earlier settings folded in) and the contacts it names. */
function sealed(profileName: string, profile: ProfileRecord): unknown {
  return { profile: profileName, policy: profilePolicy(profile), contacts: profile.policyContacts ?? {} };
}

/**
 * The profile with its policy sealed as it now stands: the earlier settings
 * folded into it, the contacts it names kept as they are now (`contacts`, name
 * → address), and the seal over both.
 */
export function sealProfile(key: Buffer, profileName: string, profile: ProfileRecord, contacts: Record<string, string>): ProfileRecord {
  const { limits: _limits, x402Max: _x402Max, policySeal: _seal, policyContacts: _contacts, ...rest } = profile;
  const policy = profilePolicy(profile);
  const named = Object.fromEntries(namedContacts(policy).flatMap((name) => (contacts[name] === undefined ? [] : [[name, contacts[name]]])));
  const next: ProfileRecord = { ...rest, policy, ...(Object.keys(named).length === 0 ? {} : { policyContacts: named }) };
  return { ...next, policySeal: sealOf(key, 'policy', sealed(profileName, next)) };
}

/** Whether the profile's policy is the one sealed with the password. */
export function policySealHolds(key: Buffer, profileName: string, profile: ProfileRecord): boolean {
  return sealHolds(key, 'policy', sealed(profileName, profile), profile.policySeal);
}

/** Every spend's refusal while the profile's policy is not the sealed one. */
export function policyTampered(profileName: string, profile: ProfileRecord): NanoPayError {
  const why = profile.policySeal === undefined ? 'has no seal' : 'does not match its seal';
  return new NanoPayError(
    'POLICY_TAMPERED',
    `The spending policy of profile "${profileName}" ${why}: it was changed by other means than nanopay with the key store password (a file or store edit), so every spend is refused; nothing was signed`,
    {
      hint: 'A person checks it (nanopay policy show), then seals it as it is (nanopay policy seal) or replaces it (nanopay policy set --from FILE); both need the key store password.',
    },
  );
}
