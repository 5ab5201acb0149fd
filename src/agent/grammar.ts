import { parseNanoUri, rawToXno } from '../nano/index.js';

/**
 * The plain grammar the agent understands without a language model. Pure:
 * text in, an intent out. Amounts and ids are kept as typed; the tools check them.
 *
 * Reads (balance, status, credits) are understood loosely, questions included.
 * Anything that moves money (send, top-up, donation) is read only from a plain
 * order: the verb first (after "please", "I want to", …), then nothing but the
 * amount in XNO, the address and a few filler words. A question, a negation,
 * a second amount or address, a missing one, another currency or any other
 * word makes it unknown: the chat then lists what it understands, and nothing
 * is guessed.
 */
export type Intent =
  | { kind: 'tool'; name: string; arguments: Record<string, string | boolean> }
  | { kind: 'confirm'; token: string }
  | { kind: 'help' }
  | { kind: 'unknown'; why?: string };

/** What the sentence was made of: its words (keywords lower-cased), and whether it asked or denied. */
interface Sentence {
  words: string[];
  text: string;
  question: boolean;
  negated: boolean;
}

const ADDRESS = /^(?:nano|xrb)_[a-z0-9]+$/i;
/** A contact of the profile, named as the tools take it (the tool resolves it, or says there is none). */
const CONTACT = /^@[a-z0-9][a-z0-9._-]{0,31}$/i;
/** An amount written with a decimal comma ("1,5"): never guessed, asked about. */
const COMMA_AMOUNT = /^Ӿ?[0-9]+,[0-9]+(?:xno|nano|Ӿ)?$/i;
const URI = /^(?:nano|nanorep|xrb):/i;
/** A number as typed (the tool decides whether it is a valid amount), with an optional XNO sign or unit glued on. */
const AMOUNT = /^Ӿ?([0-9.][0-9.,_eE+-]*)(?:xno|nano|Ӿ)?$/i;
const XNO_UNIT = new Set(['xno', 'nano', 'Ӿ']);
const TIERS = ['10', '50', '100', '500', '1000', '5000', '10000', '50000', '100000'];

const POLITE_START = /^(?:(?:hi|hey|hello|ok|okay|so|now|then|nanopay|please|pls|kindly|just|go ahead and|i want to|i wanna|i'd like to|i would like to|i need to|let's|let me)\s+)+/;
const POLITE_END = /(?:\s+(?:please|pls|thanks|thank you|thx|now|right now|for me))+$/;
const QUESTION_START = /^(?:how|what|what's|whats|why|when|where|who|which|did|do|does|can|could|should|would|will|shall|is|are|was|were|may|might|has|have|am)\b/;
const NEGATION = /\b(?:not|no|never|don't|dont|didn't|doesn't|won't|wont|shouldn't|mustn't|can't|cannot|stop|cancel|without|nothing)\b|n't\b/;

/** Words a money-moving sentence may hold besides its verb, amount and address. */
const SPEND_FILLERS = new Set(['to', 'into', 'the', 'a', 'an', 'of', 'address', 'account', 'wallet', 'exactly', 'from', 'my', 'xno', 'nano', 'Ӿ']);
const SEND_VERBS = new Set(['send', 'pay', 'transfer', 'give', 'tip', 'wire']);
/** Words a payment link may come with ("pay the invoice nano:…"). */
const URI_FILLERS = new Set(['invoice', 'bill', 'request', 'link', 'payment', 'this', 'that', 'uri']);

const PLAIN_ORDER = 'To send, say just the amount in XNO and one address, e.g. "send 0.1 to nano_…"';

export function parseSentence(text: string): Intent {
  const sentence = normalise(text);
  if (sentence.text === '') return text.trim() === '?' ? { kind: 'help' } : { kind: 'unknown' };
  return help(sentence) ?? confirm(sentence) ?? writes(sentence) ?? reads(sentence) ?? refused(sentence);
}

/**
 * Spacing, case and closing punctuation do not matter; addresses keep their
 * body, and a word with a digit or a dash (an id, a token) or one after
 * status/confirm keeps its case.
 */
function normalise(text: string): Sentence {
  let s = text.replace(/[’‘]/g, "'").trim().replace(/\s+/g, ' ');
  const question = /\?\s*$/.test(s);
  s = s.replace(/[\s.!?]+$/, '').replace(/,(?=\s|$)/g, '').replace(/:(?=\s)/g, '');
  const raw = s.split(' ');
  const words = raw
    .map((word, i) => {
      if (ADDRESS.test(word)) return word.replace(/^(nano|xrb)_/i, (p) => p.toLowerCase());
      const previous = raw[i - 1]?.toLowerCase();
      if (previous === 'status' || previous === 'confirm' || /[0-9-]/.test(word)) return word;
      return word.toLowerCase();
    })
    .join(' ')
    .replace(POLITE_START, '')
    .replace(POLITE_END, '')
    .split(' ')
    .filter((w) => w !== '');
  const joined = words.join(' ');
  return { words, text: joined, question: question || QUESTION_START.test(joined), negated: NEGATION.test(joined.toLowerCase()) };
}

function help(s: Sentence): Intent | undefined {
  const h = /^(?:help|\?|commands|menu|what can you do|what can i (?:say|do|ask)|what do you (?:understand|know)|how does (?:this|it) work)$/;
  return h.test(s.text) ? { kind: 'help' } : undefined;
}

function confirm(s: Sentence): Intent | undefined {
  const m = /^(?:yes )?confirm (\S+)$/.exec(s.text);
  return m && !s.negated ? { kind: 'confirm', token: m[1] as string } : undefined;
}

/** Sentences that start with a verb that writes (spends, receives or makes a request). */
function writes(s: Sentence): Intent | undefined {
  const [verb, ...rest] = s.words;
  if (verb === undefined) return undefined;
  if (s.text.startsWith('top up ') || s.text.startsWith('top-up ') || verb === 'topup' || verb === 'recharge') return topUp(s, s.text.startsWith('top') && verb === 'top' ? rest.slice(1) : rest);
  if (['buy', 'purchase', 'add', 'get'].includes(verb) && rest.some((w) => /^credits?$/.test(w))) return topUp(s, rest);
  if (verb === 'donate' || /^(?:make a donation|tip the service)\b/.test(s.text)) return donate(s, verb === 'donate' ? rest : s.words.slice(3));
  if (SEND_VERBS.has(verb)) return send(s, rest);
  if (['request', 'invoice', 'bill', 'charge'].includes(verb)) return request(s, rest);
  const made = /^(?:create|make|new|open)(?: a| an)?(?: new)?(?: payment)? (?:request|invoice)\b/.exec(s.text);
  if (made) return request(s, s.text.slice(made[0].length).split(' ').filter((w) => w !== ''));
  if (/^(?:get|be) paid\b|^ask for\b/.test(s.text)) return request(s, s.words.slice(2));
  if (['receive', 'pocket', 'collect', 'accept'].includes(verb)) return receive(s, verb, rest);
  return undefined;
}

/** Amounts, addresses (and contacts, @NAME), and the words that are neither, of a write's words after its verb. */
function pieces(words: string[]): { amounts: string[]; addresses: string[]; uris: string[]; others: string[]; commas: string[] } {
  const amounts: string[] = [];
  const addresses: string[] = [];
  const uris: string[] = [];
  const others: string[] = [];
  const commas: string[] = [];
  for (const word of words) {
    if (ADDRESS.test(word) || CONTACT.test(word)) addresses.push(word);
    else if (URI.test(word)) uris.push(word);
    else if (COMMA_AMOUNT.test(word)) commas.push(word);
    else if (XNO_UNIT.has(word.toLowerCase())) others.push(word.toLowerCase());
    else {
      const amount = AMOUNT.exec(word);
      if (amount && /[0-9]/.test(word)) amounts.push(amount[1] as string);
      else others.push(word.toLowerCase());
    }
  }
  return { amounts, addresses, uris, others, commas };
}

/** "1,5": the amount meant is asked about, never guessed (in some languages it is 1.5, in others fifteen hundred…). */
function commaAmount(p: { commas: string[] }, example: string): Intent | undefined {
  const word = p.commas[0];
  if (word === undefined) return undefined;
  const dotted = word.replace(/^Ӿ/, '').replace(/(?:xno|nano|Ӿ)$/i, '').replace(',', '.');
  return unknown(`Did you mean ${dotted}? Amounts are written with a dot (${example}); nothing was done.`);
}

/** Why a sentence is not read as an order, or undefined when it is one. */
function notAnOrder(s: Sentence): string | undefined {
  if (s.question) return 'That reads as a question, so nothing was done';
  if (s.negated) return 'That sentence says not to, so nothing was done';
  return undefined;
}

function send(s: Sentence, words: string[]): Intent {
  const why = notAnOrder(s);
  if (why !== undefined) return unknown(`${why}. ${PLAIN_ORDER}.`);
  const p = pieces(words);
  const comma = commaAmount(p, '"send 1.5 to nano_…"');
  if (comma !== undefined) return comma;
  if (p.uris.length === 1 && p.amounts.length === 0 && p.addresses.length === 0 && p.others.every((w) => SPEND_FILLERS.has(w) || URI_FILLERS.has(w))) return payUri(p.uris[0] as string);
  if (p.amounts.length !== 1 || p.addresses.length !== 1 || p.uris.length > 0) {
    return unknown(`I need exactly one amount and one address to send, and found ${p.amounts.length} and ${p.addresses.length + p.uris.length}; nothing was sent. ${PLAIN_ORDER}.`);
  }
  const strange = p.others.filter((w) => !SPEND_FILLERS.has(w));
  if (strange.length > 0) return unknown(`I do not send on a sentence with words I cannot place ("${strange.join(' ')}"); nothing was sent. ${PLAIN_ORDER}.`);
  return tool('wallet.send', { recipient_address: p.addresses[0] as string, amount: p.amounts[0] as string });
}

/** "pay nano:nano_…?amount=<raw>": the URI's exact amount, in XNO for the tool. */
function payUri(uri: string): Intent {
  try {
    const parsed = parseNanoUri(uri);
    if (parsed.amountRaw === undefined) return unknown(`That payment link names no amount; nothing was sent. ${PLAIN_ORDER}.`);
    return tool('wallet.send', { recipient_address: parsed.address, amount: rawToXno(parsed.amountRaw) });
  } catch {
    return unknown('That payment link is not a valid nano: URI; nothing was sent.');
  }
}

function topUp(s: Sentence, words: string[]): Intent {
  const why = notAnOrder(s);
  if (why !== undefined) return unknown(`${why}. To buy credits, say e.g. "top up 100".`);
  const p = pieces(words);
  const fillers = new Set(['credits', 'credit', 'of', 'to', 'for', 'my', 'the', 'api', 'key', 'tier', 'more', 'with', 'a', 'by']);
  if (p.amounts.length !== 1 || p.addresses.length > 0 || p.uris.length > 0 || p.others.some((w) => !fillers.has(w))) {
    return unknown(`To buy credits, name one tier (${TIERS.join(', ')}), e.g. "top up 100"; nothing was bought.`);
  }
  return tool('credits.topup', { credits_amount: p.amounts[0] as string });
}

function donate(s: Sentence, words: string[]): Intent {
  const why = notAnOrder(s);
  if (why !== undefined) return unknown(`${why}. To donate, say e.g. "donate 0.01".`);
  const p = pieces(words);
  const comma = commaAmount(p, '"donate 0.5"');
  if (comma !== undefined) return comma;
  const fillers = new Set([...SPEND_FILLERS, 'service', 'nanopay', 'project', 'developers', 'donation']);
  if (p.amounts.length !== 1 || p.addresses.length > 0 || p.uris.length > 0 || p.others.some((w) => !fillers.has(w))) {
    return unknown('To donate, say one amount in XNO, e.g. "donate 0.01" (donations go to the service); nothing was donated.');
  }
  return tool('donate.send', { amount: p.amounts[0] as string });
}

function request(s: Sentence, words: string[]): Intent {
  const why = notAnOrder(s);
  if (why !== undefined) return unknown(`${why}. To ask for a payment, say e.g. "request 2.5".`);
  const p = pieces(words);
  const comma = commaAmount(p, '"request 2.5"');
  if (comma !== undefined) return comma;
  // No "from": the address of a request is the one paid, never the payer's.
  const fillers = new Set(['to', 'into', 'the', 'a', 'an', 'of', 'for', 'payment', 'on', 'at', 'me', 'new', 'my', 'address', 'account', 'wallet', 'exactly', 'xno', 'nano', 'Ӿ']);
  if (p.amounts.length !== 1 || p.addresses.length > 1 || p.uris.length > 0 || p.others.some((w) => !fillers.has(w))) {
    return unknown('To ask for a payment, say one amount in XNO and optionally the address to be paid, e.g. "request 2.5" or "request 2.5 to nano_…".');
  }
  const to = p.addresses[0];
  return tool('payment.request', { amount: p.amounts[0] as string, ...(to === undefined ? {} : { receive_address: to }) });
}

/**
 * "receive" alone (or with "pending", "everything", …) receives what is pending. With an amount it
 * asks to be paid that much ("I want to receive 2.5 XNO"): a payment request, read as "request" is.
 */
function receive(s: Sentence, verb: string, words: string[]): Intent {
  if (verb !== 'pocket' && pieces(words).amounts.length > 0) return request(s, words);
  if (s.question || s.negated) return unknown();
  const fillers = new Set(['pending', 'incoming', 'payments', 'payment', 'blocks', 'funds', 'money', 'everything', 'all', 'my', 'the', 'what', 'is', "what's", 'waiting']);
  if (!words.every((w) => fillers.has(w))) return unknown('To receive what is pending, say "receive"; to be paid an amount, say "receive 2.5" or "request 2.5".');
  return tool('wallet.balance', { auto_receive_pending_blocks: true });
}

/** Reads: understood loosely, questions included (a read moves nothing), but never with an address (they read only this wallet). */
function reads(s: Sentence): Intent | undefined {
  if (s.negated) return undefined;
  const status = paymentStatus(s.text);
  if (status !== undefined) return tool('payment.status', { transaction_id: status });
  if (s.words.some((w) => ADDRESS.test(w) || URI.test(w))) return undefined;
  const listed = history(s.text);
  if (listed !== undefined) return tool('wallet.history', listed);
  if (SPENDING.some((pattern) => pattern.test(s.text))) return tool('spending.status', {});
  if (/\bcredits?\b|\btop-?up prices?\b|^prices$/.test(s.text)) return tool('credits.get', {});
  if (/\bbalance\b/.test(s.text) || /^how much (?:xno |nano |money )?(?:do i have|have i got|is (?:there )?(?:in|on) (?:my|the) (?:wallet|account))\b/.test(s.text)) {
    return tool('wallet.balance', /\breceiv(?:e|ing)\b/.test(s.text) ? { auto_receive_pending_blocks: true } : {});
  }
  if (/^(?:(?:show|check)(?: me)? )?(?:my )?(?:funds|wallet|money)$/.test(s.text) || /^what(?:'s| is)? in my (?:wallet|account)$/.test(s.text)) return tool('wallet.balance', {});
  return undefined;
}

/** Questions about what may be spent, what was, and what waits for approval: the spending status. */
const SPENDING = [
  /^how much (?:xno |nano |money )?(?:did|have) i (?:spent|spend|paid|pay)\b/,
  /^how much (?:more )?(?:xno |nano |money )?(?:can|may) i (?:still )?(?:spend|pay|send)\b/,
  /^what(?:'s| is)? (?:my |the )?(?:spending |payment )?(?:limits?|budgets?)\b/,
  /^what(?:'s| is)? (?:left|remaining)\b/,
  /^(?:show |list |check )?(?:my |the )?(?:spending|budget|budgets|limits|spending limits?|spending status|policy)$/,
  /^(?:show |list |check )?(?:me )?(?:my |the )?(?:pending |waiting )?approvals$/,
  /^(?:is there |is |are there |what(?:'s| is) )?(?:anything |something |payments )?waiting for (?:my |an? |your )?approvals?\b/,
  /^(?:what|which) (?:payments|spends) (?:are )?(?:waiting|pending|held)\b/,
];

const NUMBER_WORDS: Record<string, number> = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, twenty: 20 };

/** "show my last 3 payments", "history", "recent transactions": the history, with how many when said. */
function history(text: string): Record<string, string> | undefined {
  if (/^(?:(?:show|list)(?: me)? )?(?:my |the )?(?:payment |transaction |wallet )?history$/.test(text)) return {};
  const m = /^(?:(?:show|list|what are|what were)(?: me)? )?(?:my |the )?(?:last|latest|recent|most recent)(?: (\d{1,3}|[a-z]+))? (?:payments|transactions|sends|blocks|transfers)$/.exec(text);
  if (m === null) return /^what did i (?:pay|send|spend) (?:recently|lately|last)$/.test(text) ? {} : undefined;
  const count = m[1] === undefined ? undefined : /^\d+$/.test(m[1]) ? Number(m[1]) : NUMBER_WORDS[m[1]];
  if (m[1] !== undefined && count === undefined) return undefined;
  return count === undefined ? {} : { limit: String(Math.min(count, 100)) };
}

/** The transaction id of a status question ("status <id>", "is <id> paid?", …); ids hold a digit or a dash. */
function paymentStatus(text: string): string | undefined {
  const item = String.raw`(?:(?:the|my) )?(?:(?:payment|request|invoice|transaction) )?`;
  const patterns = [
    new RegExp(String.raw`^(?:(?:payment|request) )?status(?: (?:of|for))? ${item}(\S+)$`),
    new RegExp(String.raw`^(?:check|show)(?: (?:the )?status(?: of)?)? ${item}(\S+)$`),
    new RegExp(String.raw`^(?:what's|whats|what is) (?:the )?status (?:of|for) ${item}(\S+)$`),
    new RegExp(String.raw`^(?:is|was|has|have|did) ${item}(\S+) (?:been )?(?:paid|settled|get paid|received|come in)(?: yet)?$`),
    new RegExp(String.raw`^(?:did|has) (?:anyone|someone|somebody|the customer|they) pa(?:y|id)(?: for)? ${item}(\S+)(?: yet)?$`),
  ];
  for (const pattern of patterns) {
    const id = pattern.exec(text)?.[1];
    if (id !== undefined && /[0-9-]/.test(id) && !ADDRESS.test(id)) return id;
  }
  return undefined;
}

/** An unknown sentence that looked like a payment gets a reason; the chat adds the list of what it understands. */
function refused(s: Sentence): Intent {
  if (s.words.some((w) => SEND_VERBS.has(w) || w === 'donate' || w === 'topup') && (s.question || s.negated)) return unknown(`${notAnOrder(s) ?? 'Nothing was done'}. ${PLAIN_ORDER}.`);
  return unknown();
}

function tool(name: string, args: Record<string, string | boolean>): Intent {
  return { kind: 'tool', name, arguments: args };
}

const unknown = (why?: string): Intent => (why === undefined ? { kind: 'unknown' } : { kind: 'unknown', why });

export const HELP = [
  'I understand:',
  '  balance / how much do I have            the balance and pending amount',
  '  receive                                 receive everything pending, then the balance',
  '  send 0.1 to nano_… / pay nano_… 0.1     send XNO to an address or a contact (@alice), or pay nano:…?amount=…',
  '  request 2.5 [to nano_…]                 a payment request for 2.5 XNO (also: receive 2.5, get paid 2.5, bill 2.5)',
  '  status <id> / is <id> paid?             whether a payment request was paid',
  '  credits                                 the API credit balance and top-up prices',
  '  how much did I spend / what is my limit  what the spending policy still allows, and what waits for approval',
  '  show my last 5 payments / history       the latest payments of the wallet',
  '  top up 100 / buy 100 credits            buy 100 credits',
  '  donate 0.01                             donate XNO to the service',
  '  confirm <token>                         carry out a payment that asked for confirmation',
  '  help                                    this list',
  'Payments are made only from a plain order: the amount in XNO and one address, no question, no "don\'t".',
].join('\n');
