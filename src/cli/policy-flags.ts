import { Flags } from '@oclif/core';
import { RULE_FRONT_ENDS } from '../ops/spending/policy.js';

/** Which part of the spending policy a rule of `policy set` / `policy unset` is about. */
export const SCOPE_FLAGS = {
  recipient: Flags.string({ description: 'the rule is about this recipient: an address, or @NAME of a contact' }),
  host: Flags.string({ description: 'the rule is about x402 payments to this host (api.example.com, api.example.com:8080, *.example.com)' }),
  'front-end': Flags.string({ description: 'the rule is about spends asked by this front end', options: [...RULE_FRONT_ENDS] }),
};

/** The scope the flags name. */
export const scopeOf = (flags: { recipient?: string; host?: string; 'front-end'?: string }) => ({
  ...(flags.recipient === undefined ? {} : { recipient: flags.recipient }),
  ...(flags.host === undefined ? {} : { host: flags.host }),
  ...(flags['front-end'] === undefined ? {} : { frontEnd: flags['front-end'] }),
});

