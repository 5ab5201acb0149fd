import { NanoPayError } from '../errors.js';

const UNIT_SECONDS = { d: 86_400, h: 3600, m: 60, s: 1 } as const;

/** Seconds as the shortest text parseDuration reads back: 90 → "1m30s", 86400 → "1d". */
export function formatDuration(seconds: number): string {
  let left = seconds;
  let text = '';
  for (const [unit, size] of Object.entries(UNIT_SECONDS)) {
    const count = Math.floor(left / size);
    if (count > 0) text += `${count}${unit}`;
    left -= count * size;
  }
  return text === '' ? '0s' : text;
}

/**
 * "30s", "15m", "2h", "1d", "1h30m" → seconds, from 1 s up to `bounds.max`;
 * `bounds.what` names what lasts that long in the refusal.
 */
export function parseDuration(text: string, bounds: { max: number; what: string }): number {
  const match = /^(?:(\d{1,5})d)?(?:(\d{1,5})h)?(?:(\d{1,5})m)?(?:(\d{1,5})s)?$/.exec(text.trim());
  if (match === null || text.trim() === '') {
    throw new NanoPayError('USAGE', `"${text}" is not a duration; write it like 30s, 15m, 2h, 1d or 1h30m`);
  }
  const [, d = '0', h = '0', m = '0', s = '0'] = match;
  const seconds = Number(d) * UNIT_SECONDS.d + Number(h) * UNIT_SECONDS.h + Number(m) * UNIT_SECONDS.m + Number(s);
  if (seconds < 1 || seconds > bounds.max) {
    throw new NanoPayError('USAGE', `${bounds.what} lasts from 1s to ${formatDuration(bounds.max)}, not ${text}`);
  }
  return seconds;
}
