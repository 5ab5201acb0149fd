import { Flags } from '@oclif/core';
import { parseDuration } from '../ops/duration.js';

/** A wait of a watch: longer than a day is no wait a command should be left in. */
const MAX_WAIT_S = 7 * 86_400;

/**
 * A flag of seconds that also takes a duration (30s, 5m, 1h30m), as request --expires-in and the
 * other durations do: a bare number is seconds, as it always was.
 */
export function waitFlag(description: string) {
  return Flags.custom<number>({
    description: `${description}: seconds, or a duration such as 30s, 5m, 1h`,
    parse: async (input) => (/^\d+$/.test(input.trim()) ? parseDuration(`${input.trim()}s`, { max: MAX_WAIT_S, what: 'A wait' }) : parseDuration(input, { max: MAX_WAIT_S, what: 'A wait' })),
  })();
}
