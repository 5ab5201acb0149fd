import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { publicKeyToAddress } from '../../../src/nano/index.js';
import { until } from '../network/webhook-receiver.js';

/**
 * The answers of the node's batch actions and of its WebSocket filter, taken the same way from any node
 * (the reference nano_node, the sandbox) and written with the names of the accounts and without what
 * differs from ledger to ledger (hashes, times, balances), so that they compare as they are.
 */
export interface NodeUnderTest {
  rpcUrl: string;
  wsUrl: string;
  /** The account `fund` sends from (opened, with a frontier). */
  funder: string;
  /** Sends `raw` from the funder to `address`, confirmed. */
  fund(address: string, raw: bigint): Promise<string>;
}

type Json = Record<string, unknown>;

const fresh = (): string => publicKeyToAddress(randomBytes(32));

async function rpc(node: NodeUnderTest, body: Json): Promise<Json> {
  const response = await fetch(node.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()) as Json;
}

/** `value` with the accounts and blocks named (by `names`), other block hashes as HASH, lists of names in order (a node lists blocks by hash). */
function written(value: unknown, names: Map<string, string>): unknown {
  if (typeof value === 'string') return names.get(value) ?? (/^[0-9A-F]{64}$/.test(value) ? 'HASH' : value);
  if (Array.isArray(value)) return value.map((v) => written(v, names)).sort();
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [String(written(k, names)), written(v, names)]));
}

/**
 * accounts_receivable, accounts_balances and accounts_frontiers over: an unopened account with two
 * blocks waiting (1000 and 5 raw), an unopened one with none, the funder (opened, named in its xrb_
 * form), an address no node decodes, and empty lists.
 */
export async function batchAnswers(node: NodeUnderTest): Promise<unknown[]> {
  const [waiting, empty] = [fresh(), fresh()];
  const names = new Map([
    [await node.fund(waiting, 1000n), 'SEND_1000'],
    [await node.fund(waiting, 5n), 'SEND_5'],
    [waiting, 'WAITING'],
    [empty, 'EMPTY'],
    [node.funder, 'FUNDER'],
    [node.funder.replace(/^nano_/, 'xrb_'), 'FUNDER_XRB'],
  ]);
  const bad = 'nano_bad';
  const calls: Json[] = [
    { action: 'accounts_receivable', accounts: [waiting, empty] },
    { action: 'accounts_receivable', accounts: [waiting, empty], threshold: '1', source: 'true', count: '1000' },
    { action: 'accounts_receivable', accounts: [waiting], threshold: '6' },
    { action: 'accounts_receivable', accounts: [empty] },
    { action: 'accounts_receivable', accounts: [] },
    { action: 'accounts_receivable', accounts: [waiting, bad] },
    { action: 'accounts_pending', accounts: [waiting], threshold: '1', source: 'true' },
    { action: 'accounts_balances', accounts: [waiting, empty, bad] },
    { action: 'accounts_balances', accounts: [] },
    { action: 'accounts_frontiers', accounts: [node.funder.replace(/^nano_/, 'xrb_'), empty, bad] },
    { action: 'accounts_frontiers', accounts: [empty] },
    { action: 'accounts_frontiers', accounts: [] },
  ];
  const answers: unknown[] = [];
  for (const call of calls) {
    const answer = await rpc(node, call);
    // accounts_pending says it is deprecated on the node; the rest is the same.
    delete answer.deprecated;
    answers.push(written({ call: call.action, answer }, names));
  }
  return answers;
}

/** What a node sent, as it arrived. */
interface Heard {
  messages: Json[];
  send(message: Json): void;
  close(): void;
}

async function listen(node: NodeUnderTest): Promise<Heard> {
  const socket = new WebSocket(node.wsUrl);
  const messages: Json[] = [];
  socket.on('message', (raw) => messages.push(JSON.parse(raw.toString()) as Json));
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return { messages, send: (m) => socket.send(JSON.stringify(m)), close: () => socket.terminate() };
}

/**
 * The `confirmation` topic's filter kept with `update`: subscribed with an empty list (nothing comes),
 * accounts added and removed, an update without options and one of a topic not subscribed to (no ack
 * either), then a ping; each confirmation written as its account, destination, amount and subtype.
 */
export async function filterAnswers(node: NodeUnderTest): Promise<unknown[]> {
  const [never, added, later] = [fresh(), fresh(), fresh()];
  const names = new Map([
    [never, 'NEVER'],
    [added, 'ADDED'],
    [later, 'LATER'],
    [node.funder, 'FUNDER'],
  ]);
  const heard = await listen(node);
  const acked = (id: string): Promise<void> => until(() => heard.messages.some((m) => m.id === id), `the ack of ${id}`);
  const told = (amount: string): Promise<void> => until(() => heard.messages.some((m) => (m.message as Json | undefined)?.amount === amount), `the confirmation of ${amount} raw`);
  try {
    heard.send({ action: 'subscribe', topic: 'confirmation', ack: true, id: 'empty', options: { accounts: [] } });
    await acked('empty');
    // Confirmed before anything is added: never told, whatever comes after.
    await node.fund(never, 7n);
    heard.send({ action: 'update', topic: 'confirmation', ack: true, id: 'add', options: { accounts_add: [added] } });
    await acked('add');
    await node.fund(added, 8n);
    await told('8');
    heard.send({ action: 'update', topic: 'confirmation', ack: true, id: 'del', options: { accounts_del: [added], accounts_add: [later] } });
    await acked('del');
    await node.fund(added, 9n);
    await node.fund(later, 10n);
    await told('10');
    heard.send({ action: 'update', topic: 'confirmation', ack: true, id: 'no-options' });
    heard.send({ action: 'update', topic: 'vote', ack: true, id: 'not-subscribed', options: { accounts_add: [never] } });
    heard.send({ action: 'ping', id: 'ping' });
    await acked('ping');
  } finally {
    heard.close();
  }
  return heard.messages.map((m) => {
    if (m.ack !== undefined) return written({ ack: m.ack, id: m.id, keys: Object.keys(m).sort() }, names);
    const message = m.message as { account: string; amount: string; confirmation_type: string; block: Json };
    return written(
      { topic: m.topic, account: message.account, amount: message.amount, type: message.confirmation_type, to: message.block.link_as_account, subtype: message.block.subtype, block: Object.keys(message.block).sort() },
      names,
    );
  });
}

const BLOCK_FIELDS = ['account', 'balance', 'link', 'link_as_account', 'previous', 'representative', 'signature', 'subtype', 'type', 'work'];
const ACK_FIELDS = ['ack', 'id', 'time'];

/** What the reference nano_node V27.1 answers batchAnswers (recorded from it; the real-node tier checks it still does). */
export const NODE_BATCH_ANSWERS: unknown[] = [
  { call: 'accounts_receivable', answer: { blocks: { WAITING: ['SEND_1000', 'SEND_5'] } } },
  { call: 'accounts_receivable', answer: { blocks: { WAITING: { SEND_1000: { amount: '1000', source: 'FUNDER' }, SEND_5: { amount: '5', source: 'FUNDER' } } } } },
  { call: 'accounts_receivable', answer: { blocks: { WAITING: { SEND_1000: '1000' } } } },
  // Not {"blocks": {}}: none at all is "", as `receivable` says it.
  { call: 'accounts_receivable', answer: { blocks: '' } },
  { call: 'accounts_receivable', answer: { blocks: '' } },
  // One bad account fails the call (accounts_balances and accounts_frontiers list it in "errors" instead).
  { call: 'accounts_receivable', answer: { error: 'Bad account number' } },
  { call: 'accounts_pending', answer: { blocks: { WAITING: { SEND_1000: { amount: '1000', source: 'FUNDER' }, SEND_5: { amount: '5', source: 'FUNDER' } } } } },
  {
    call: 'accounts_balances',
    answer: { balances: { WAITING: { balance: '0', pending: '1005', receivable: '1005' }, EMPTY: { balance: '0', pending: '0', receivable: '0' } }, errors: { nano_bad: 'Bad account number' } },
  },
  { call: 'accounts_balances', answer: { error: 'Empty response' } },
  // The xrb_ account asked comes back as nano_, with its head (its last send); an unopened one is an error, not a zero hash.
  { call: 'accounts_frontiers', answer: { frontiers: { FUNDER: 'SEND_5' }, errors: { EMPTY: 'Account not found', nano_bad: 'Bad account number' } } },
  { call: 'accounts_frontiers', answer: { errors: { EMPTY: 'Account not found' } } },
  { call: 'accounts_frontiers', answer: { error: 'Empty response' } },
];

const confirmed = (amount: string, to: string): unknown => ({ topic: 'confirmation', account: 'FUNDER', amount, type: 'active_quorum', to, subtype: 'send', block: BLOCK_FIELDS });

/** What the reference nano_node V27.1 sends in filterAnswers: nothing for NEVER, nor for ADDED once removed; no ack for the two failed updates. */
export const NODE_FILTER_ANSWERS: unknown[] = [
  { ack: 'subscribe', id: 'empty', keys: ACK_FIELDS },
  { ack: 'update', id: 'add', keys: ACK_FIELDS },
  confirmed('8', 'ADDED'),
  { ack: 'update', id: 'del', keys: ACK_FIELDS },
  confirmed('10', 'LATER'),
  { ack: 'pong', id: 'ping', keys: ACK_FIELDS },
];
