/**
 * The plain grammar the agent understands without a language model. Pure:
 * text in, an intent out. Amounts and ids are kept as typed; the tools check them.
 */
export type Intent =
  | { kind: 'tool'; name: string; arguments: Record<string, string | boolean> }
  | { kind: 'confirm'; token: string }
  | { kind: 'help' }
  | { kind: 'unknown' };

const AMOUNT = String.raw`(\S+?)(?:\s*(?:xno|nano))?`;
const ADDRESS = String.raw`((?:nano|xrb)_\S+)`;

const RULES: { pattern: RegExp; intent(match: RegExpExecArray): Intent }[] = [
  { pattern: /^(?:help|\?)$/, intent: () => ({ kind: 'help' }) },
  { pattern: /^(?:(?:check |my |show )?balance)$/, intent: () => tool('wallet.balance', {}) },
  { pattern: /^receive$/, intent: () => tool('wallet.balance', { auto_receive_pending_blocks: true }) },
  {
    pattern: new RegExp(`^(?:send|pay) ${AMOUNT} to ${ADDRESS}$`),
    intent: (m) => tool('wallet.send', { recipient_address: m[2] as string, amount: m[1] as string }),
  },
  { pattern: new RegExp(`^request ${AMOUNT}$`), intent: (m) => tool('payment.request', { amount: m[1] as string }) },
  { pattern: /^status (\S+)$/, intent: (m) => tool('payment.status', { transaction_id: m[1] as string }) },
  { pattern: /^credits$/, intent: () => tool('credits.get', {}) },
  { pattern: /^top ?up (\S+)(?: credits)?$/, intent: (m) => tool('credits.topup', { credits_amount: m[1] as string }) },
  { pattern: new RegExp(`^donate ${AMOUNT}$`), intent: (m) => tool('donate.send', { amount: m[1] as string }) },
  { pattern: /^confirm (\S+)$/, intent: (m) => ({ kind: 'confirm', token: m[1] as string }) },
];

function tool(name: string, args: Record<string, string | boolean>): Intent {
  return { kind: 'tool', name, arguments: args };
}

/** Case and spacing do not matter, nor a final full stop; addresses, ids and tokens keep their case. */
export function parseSentence(text: string): Intent {
  const sentence = text.trim().replace(/[.!]+$/, '').replace(/\s+/g, ' ');
  for (const rule of RULES) {
    const match = rule.pattern.exec(lowerKeywords(sentence));
    if (match) return rule.intent(match);
  }
  return { kind: 'unknown' };
}

/** Lower-cases every word but addresses and the argument of status/confirm (ids and tokens are case-sensitive). */
function lowerKeywords(sentence: string): string {
  const words = sentence.split(' ');
  return words
    .map((word, i) => {
      const previous = words[i - 1]?.toLowerCase();
      if (/^(?:nano|xrb)_/i.test(word)) return word.replace(/^(nano|xrb)_/i, (p) => p.toLowerCase());
      if (previous === 'status' || previous === 'confirm') return word;
      return word.toLowerCase();
    })
    .join(' ');
}

export const HELP = [
  'I understand:',
  '  balance                  the balance and pending amount',
  '  receive                  receive everything pending, then the balance',
  '  send 0.1 to nano_…       send XNO to an address',
  '  request 2.5              a payment request for 2.5 XNO',
  '  status <id>              whether a payment request was paid',
  '  credits                  the API credit balance and top-up prices',
  '  top up 100               buy 100 credits',
  '  donate 0.01              donate XNO to the service',
  '  confirm <token>          carry out a payment that asked for confirmation',
  '  help                     this list',
].join('\n');
