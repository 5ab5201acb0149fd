import { fetchRates, rateSourceName, type RateAnswer } from '../../api/rate-source.js';
import { NanoPayError } from '../../errors.js';
import type { AcceptedRate, FiatPrice } from '../../store/prices.js';
import { formatDuration } from '../duration.js';
import type { FiatAmount } from '../money.js';
import type { Session } from '../session.js';
import { fiatToRaw, formatDecimal, greaterThan, movedBeyond, parseCurrency, parseFiatAmount, parsePercent, parseRate, type Decimal } from './fiat.js';

export const DEFAULT_RATE_CACHE_S = 30;
export const MAX_RATE_CACHE_S = 3600;
export const DEFAULT_RATE_MAX_AGE_S = 600;
export const MAX_RATE_MAX_AGE_S = 7 * 86_400;
export const DEFAULT_RATE_MAX_MOVE = '10';
/** How long a price in another currency holds its XNO amount (the request expires then): BTCPay's default too. */
export const DEFAULT_RATE_QUOTE_WINDOW_S = 900;
/** A quote that held longer would let a customer pay at a rate of another day. */
export const MAX_RATE_QUOTE_WINDOW_S = 86_400;
/**
 * rate-max-move holds against every rate accepted this long ago or since (and the last accepted, however old), so a
 * rate sliding a little at each step cannot add up to more.
 */
const RATE_MOVE_WINDOW_MS = 3_600_000;
/** A source's clock may run this far ahead of ours; a rate dated later than that is misdated. */
const CLOCK_SKEW_MS = 60_000;

interface RateSettings {
  url: string;
  cacheMs: number;
  maxAgeMs: number;
  maxMove: Decimal;
}

function rateSettings(session: Session): RateSettings {
  const profile = session.profile();
  const url = session.env.NANOPAY_RATE_SOURCE || profile.rateSource;
  if (!url) {
    throw new NanoPayError('RATE_UNAVAILABLE', 'No rate source is set, so a price in another currency cannot be turned into XNO; no request was made', {
      hint: 'Set one: nanopay config set rate-source URL (docs/shop.md, "Prices in the shop\'s currency"), or give the amount in XNO.',
    });
  }
  return {
    url,
    cacheMs: (profile.rateCacheSeconds ?? DEFAULT_RATE_CACHE_S) * 1000,
    maxAgeMs: (profile.rateMaxAgeSeconds ?? DEFAULT_RATE_MAX_AGE_S) * 1000,
    maxMove: parsePercent(profile.rateMaxMove ?? DEFAULT_RATE_MAX_MOVE, 'rate-max-move'),
  };
}

/** A source's answer as this process keeps it: when it was asked, and the rates already checked against the last accepted. */
interface Fetched {
  at: number;
  answer: Promise<RateAnswer>;
  accepted: Map<string, AcceptedRate>;
}

/** Per source URL, for rate-cache: requests made meanwhile share one answer (and one fetch while it is under way). */
const fetched = new Map<string, Fetched>();

function answerOf(settings: RateSettings, now: number): Fetched {
  const kept = fetched.get(settings.url);
  if (kept !== undefined && now - kept.at < settings.cacheMs) return kept;
  const entry: Fetched = { at: now, answer: fetchRates(settings.url), accepted: new Map() };
  // A failure is not kept: the next request asks again.
  entry.answer.catch(() => {
    if (fetched.get(settings.url) === entry) fetched.delete(settings.url);
  });
  fetched.set(settings.url, entry);
  return entry;
}

/** How long a price in another currency holds (rate-quote-window, seconds): its request expires then. */
export function quoteWindowS(session: Session): number {
  return session.profile().rateQuoteWindowSeconds ?? DEFAULT_RATE_QUOTE_WINDOW_S;
}

const sameRate = (a: AcceptedRate, b: AcceptedRate | undefined): boolean => b !== undefined && a.rate === b.rate && a.accepted_at === b.accepted_at;

/**
 * The accepted rates a new one is checked against: the last accepted (first), and those of the last
 * RATE_MOVE_WINDOW_MS (`recent`, oldest first). A rate let through under a larger rate-max-move than today's was
 * the owner's word that the market moved: those accepted before it no longer count.
 */
function references(recent: AcceptedRate[], last: AcceptedRate | undefined, maxMove: Decimal): AcceptedRate[] {
  const all = last === undefined || recent.some((r) => sameRate(r, last)) ? recent : [last, ...recent];
  const overridden = all.map((r) => r.max_move !== undefined && greaterThan(parsePercent(r.max_move, 'rate-max-move'), maxMove)).lastIndexOf(true);
  const counted = all.slice(Math.max(0, overridden));
  return [...counted.filter((r) => sameRate(r, last)), ...counted.filter((r) => !sameRate(r, last))];
}

/**
 * The rate of `currency` (units per XNO) to price a request with now. Never
 * trusted as it comes: it must be a positive decimal within bounds, dated (by
 * the source, else by the fetch) no longer ago than rate-max-age, and no more
 * than rate-max-move away from the last rate accepted for the currency nor from
 * any accepted within RATE_MOVE_WINDOW_MS (kept in the store, so a restart does
 * not forget them); it is then accepted. The first rate of a currency has
 * nothing to be compared with.
 */
async function acceptedRate(session: Session, currency: string, now = Date.now()): Promise<AcceptedRate> {
  const settings = rateSettings(session);
  const source = rateSourceName(settings.url);
  const entry = answerOf(settings, now);
  const answer = await entry.answer;
  const refused = (code: string, why: string, hint: string): NanoPayError => new NanoPayError(code, `The ${currency} rate from ${source} ${why}; no request was made`, { hint });
  const text = answer.rates.get(currency);
  if (text === undefined) throw refused('RATE_UNAVAILABLE', 'is not given: the source has no such currency', 'Price in a currency the source gives, or in XNO.');
  const rate = parseRate(text);
  if (rate === undefined) throw refused('RATE_UNAVAILABLE', `is "${text.slice(0, 40)}", not a positive decimal of at most 30 digits`, 'Check the rate source.');
  if (answer.time !== undefined && answer.time > now + CLOCK_SKEW_MS) {
    throw refused('RATE_UNAVAILABLE', `is dated ${new Date(answer.time).toISOString()}, in the future`, "Check the rate source's clock, and this machine's.");
  }
  const dated = Math.min(answer.time ?? entry.at, entry.at);
  if (now - dated > settings.maxAgeMs) {
    throw refused('RATE_STALE', `is from ${new Date(dated).toISOString()}, older than rate-max-age (${formatDuration(settings.maxAgeMs / 1000)})`, 'Check that the rate source still updates; raise rate-max-age if it updates less often.');
  }
  const known = entry.accepted.get(currency);
  if (known !== undefined) return known;
  const store = await session.dataStore();
  const last = await store.prices.lastRate(currency);
  const recent = await store.prices.acceptedSince(currency, new Date(now - RATE_MOVE_WINDOW_MS).toISOString());
  for (const reference of references(recent, last, settings.maxMove)) {
    const referenceRate = parseRate(reference.rate);
    if (referenceRate === undefined || !movedBeyond(referenceRate, rate, settings.maxMove)) continue;
    const which = sameRate(reference, last) ? 'the last accepted' : `one accepted at ${reference.accepted_at}, within the last ${formatDuration(RATE_MOVE_WINDOW_MS / 1000)}`;
    throw refused(
      'RATE_MOVED',
      `is ${formatDecimal(rate)}, more than rate-max-move (${formatDecimal(settings.maxMove)}%) away from ${which}, ${reference.rate} (from ${reference.time})`,
      'Check the rate source. If the market really moved that much, let this rate through once (nanopay config set rate-max-move with a larger bound, make the request, then set it back): the rates accepted before it then no longer count.',
    );
  }
  const accepted: AcceptedRate = {
    currency,
    rate: formatDecimal(rate),
    source,
    time: new Date(dated).toISOString(),
    accepted_at: new Date(now).toISOString(),
    max_move: formatDecimal(settings.maxMove),
  };
  if (last?.rate !== accepted.rate || last.time !== accepted.time) await store.prices.accept(accepted, new Date(now - RATE_MOVE_WINDOW_MS).toISOString());
  entry.accepted.set(currency, accepted);
  return accepted;
}

/**
 * What a price in another currency comes to in XNO now (raw, before the
 * request's own offset or the service's adjustment), and the price as it is
 * kept with the request. Refused (RATE_*) before any request is made.
 */
export async function priceInXno(session: Session, price: FiatAmount): Promise<{ raw: bigint; fiat: FiatPrice }> {
  const currency = parseCurrency(price.currency);
  const amount = parseFiatAmount(price.fiat);
  const rate = await acceptedRate(session, currency);
  return {
    raw: fiatToRaw(amount, parseRate(rate.rate) as Decimal),
    fiat: { currency, amount: price.fiat.trim(), rate: rate.rate, rate_source: rate.source, rate_time: rate.time },
  };
}
