import { NanoPayError } from '../errors.js';
import { exchange } from './transport.js';

/**
 * The client of a rate source (config set rate-source URL): one GET, answered
 * with the price of 1 XNO in other currencies, in one of two shapes:
 *
 *   nanopay's:  {"XNO": {"EUR": "0.93", "USD": "1.01"}, "time": "2026-03-01T12:00:00Z"}
 *   CoinGecko's simple price (ids=nano&vs_currencies=eur,usd&include_last_updated_at=true):
 *               {"nano": {"eur": 0.93, "usd": 1.01, "last_updated_at": 1772366400}}
 *
 * Rates may be strings or JSON numbers: a number is read from its text, exactly,
 * never through a float. `time` (ISO 8601 or Unix seconds) or `last_updated_at`
 * (Unix seconds) dates the rates; without one, the fetch does. What the rates
 * are worth is checked by ops/pricing/rates.ts, not here.
 */
export interface RateAnswer {
  /** Upper-case currency code → the rate's text as the source wrote it (currency per XNO). */
  rates: Map<string, string>;
  /** When the source says its rates are from (ms since the epoch). */
  time?: number;
}

/** A rate answer is a few hundred bytes; more is not one. */
const MAX_RATE_ANSWER_BYTES = 64 * 1024;
const TIMEOUT_MS = 10_000;

/** The source as it is named in messages and kept with each price: no credentials, no query (an API key may be there). */
export function rateSourceName(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}

function unusable(source: string, why: string): NanoPayError {
  return new NanoPayError('RATE_UNAVAILABLE', `The rate source ${source} ${why}; no request was made`, {
    hint: 'Check rate-source (nanopay config get rate-source): it must answer {"XNO": {"EUR": "0.93"}, "time": "…"}, or CoinGecko\'s simple price for ids=nano.',
  });
}

/** Marks a JSON number's text inside a string, so JSON.parse keeps it as written. */
const NUMBER_MARK = '\u0000number:';
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** A JSON number kept as its text. */
class JsonNumber {
  constructor(readonly text: string) {}
}

/**
 * JSON.parse, with every number kept as its text (a JsonNumber): numbers outside strings are turned into
 * marked strings first. A string of the source spelling a marked number reads as that number, nothing worse.
 */
function parseKeepingNumbers(text: string): unknown {
  let out = '';
  let copied = 0;
  for (let i = 0; i < text.length; ) {
    const c = text[i] as string;
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; ) i += text[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = c === '-' || (c >= '0' && c <= '9') ? NUMBER.exec(text) : null;
    if (number === null) {
      i++;
      continue;
    }
    out += `${text.slice(copied, i)}${JSON.stringify(NUMBER_MARK + number[0])}`;
    i += number[0].length;
    copied = i;
  }
  out += text.slice(copied);
  return JSON.parse(out, (_key, value: unknown) => (typeof value === 'string' && value.startsWith(NUMBER_MARK) ? new JsonNumber(value.slice(NUMBER_MARK.length)) : value));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonNumber);

/** A time as ISO 8601 text or Unix seconds; undefined when absent, NaN when not a time. */
function timeOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (value instanceof JsonNumber) return /^\d{1,12}(\.\d+)?$/.test(value.text) ? Number(value.text) * 1000 : NaN;
  if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value)) return Date.parse(value);
  return NaN;
}

/** The answer of a rate source, read (the shape is checked, the rates' values are not). */
function readRateAnswer(text: string, source: string): RateAnswer {
  let parsed: unknown;
  try {
    parsed = parseKeepingNumbers(text);
  } catch {
    throw unusable(source, 'did not answer JSON');
  }
  if (!isObject(parsed)) throw unusable(source, 'did not answer a JSON object');
  const key = Object.keys(parsed).find((k) => k === 'XNO' || k === 'nano');
  const prices = key === undefined ? undefined : parsed[key];
  if (!isObject(prices)) throw unusable(source, 'answered without an "XNO" (or CoinGecko "nano") object of rates');
  const rates = new Map<string, string>();
  for (const [code, value] of Object.entries(prices)) {
    if (!/^[A-Za-z]{3}$/.test(code)) continue;
    if (value instanceof JsonNumber) rates.set(code.toUpperCase(), value.text);
    else if (typeof value === 'string') rates.set(code.toUpperCase(), value);
  }
  const time = timeOf(parsed.time ?? prices.last_updated_at);
  if (time !== undefined && !Number.isFinite(time)) throw unusable(source, 'dated its rates with something that is not a time');
  return { rates, ...(time === undefined ? {} : { time }) };
}

/** Asks the rate source at `url` (proxy-aware, bounded in size and time). */
export async function fetchRates(url: string): Promise<RateAnswer> {
  const source = rateSourceName(url);
  const answer = await exchange({
    url,
    method: 'GET',
    headers: {},
    timeoutMs: TIMEOUT_MS,
    deadlineMs: 2 * TIMEOUT_MS,
    retries: 1,
    party: 'rate source',
    where: `GET ${source}`,
    hint: 'Check rate-source (nanopay config get rate-source) and your network; no request was made.',
    maxAnswerBytes: MAX_RATE_ANSWER_BYTES,
  }).catch((error: unknown) => {
    if (error instanceof NanoPayError) throw new NanoPayError('RATE_UNAVAILABLE', `${error.message}; no request was made`, { ...(error.hint === undefined ? {} : { hint: error.hint }), cause: error });
    throw error;
  });
  if (answer.status !== 200) throw unusable(source, `answered HTTP ${answer.status}`);
  return readRateAnswer(answer.text, source);
}
