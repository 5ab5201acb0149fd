import {
  DEFAULT_REPRESENTATIVE,
  buildReceiveBlock,
  buildSendBlock,
  deriveAccount,
  generateSeed,
  signBlock,
  workRoot,
  type Account,
  type AccountState,
  type LedgerBlock,
  type StateBlock,
} from '../../../src/nano/index.js';
import { startSandbox, type RunningSandbox } from '../../../src/sandbox/index.js';
import { generateWork, validateWork, type Thresholds } from '../../../src/work/index.js';

/** The state block a block's info holds: the sandbox and nanopay make no other kind, so a legacy one fails the test here. */
export function stateBlockOf(info: { contents: LedgerBlock }): StateBlock {
  if (info.contents.type !== 'state') throw new Error(`expected a state block, got a legacy ${info.contents.type} block`);
  return info.contents;
}

/** An answer of the sandbox: its envelope plus the HTTP status. */
export interface Reply<T = Record<string, any>> {
  status: number;
  success: boolean;
  data: T;
  error: { error: string; message: string } | null;
}

/**
 * A client of a running sandbox for tests: plain HTTP calls, plus blocks built,
 * signed and worked with the real protocol core and PoW engine, at the
 * thresholds the sandbox advertises.
 */
export class SandboxClient {
  private thresholds: Thresholds | undefined;

  constructor(
    readonly url: string,
    public apiKey = '',
  ) {}

  /** A client holding the API key of a newly created wallet. */
  static async withNewKey(url: string): Promise<SandboxClient> {
    const client = new SandboxClient(url);
    client.apiKey = (await client.call('POST', '/wallet/create')).data.api_key as string;
    return client;
  }

  /** A call with this client's key; a string body is sent as it is (for malformed JSON). */
  async call<T = Record<string, any>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: response.status, ...((await response.json()) as Omit<Reply<T>, 'status'>) };
  }

  /** The account's ledger head; an unopened account has no frontier. */
  async head(account: Account): Promise<AccountState> {
    const info = await this.call('POST', '/account/info', { address: account.address });
    if (!info.success) return { address: account.address, frontier: null, balance: 0n, representative: DEFAULT_REPRESENTATIVE };
    return { address: account.address, frontier: info.data.frontier, balance: BigInt(info.data.balance), representative: info.data.representative };
  }

  async advertisedThresholds(): Promise<Thresholds> {
    if (this.thresholds === undefined) {
      const d = (await this.call('GET', '/network/active-difficulty')).data;
      this.thresholds = { send: d.network_minimum, receive: d.network_receive_minimum };
    }
    return this.thresholds;
  }

  /** Signs a block and makes its work: `kind` picks the threshold (send/change or receive/open). */
  async complete(block: StateBlock, signer: Account, kind: 'send' | 'receive'): Promise<StateBlock> {
    const work = await generateWork(workRoot(block), (await this.advertisedThresholds())[kind]);
    return { ...block, signature: signBlock(block, signer.privateKey), work };
  }

  /** A work nonce that fails `threshold` for this block, for the work rejection. */
  static badWork(block: StateBlock, threshold: string): string {
    for (let n = 0; ; n++) {
      const work = n.toString(16).padStart(16, '0');
      if (!validateWork(workRoot(block), work, threshold)) return work;
    }
  }

  publish(block: unknown, subtype?: string): Promise<Reply> {
    return this.call('POST', '/block/publish', subtype === undefined ? { block } : { subtype, block });
  }

  /** The faucet (no key needed): `amount` XNO from genesis; returns the send's hash. */
  async fund(address: string, amount: string): Promise<string> {
    const reply = await this.call('POST', '/sandbox/fund', { address, amount });
    if (!reply.success) throw new Error(`faucet failed: ${JSON.stringify(reply.error)}`);
    return reply.data.hash as string;
  }

  /** A signed, worked send from `from`; returns the published hash. */
  async send(from: Account, to: string, amount: bigint): Promise<string> {
    const block = await this.complete(buildSendBlock(await this.head(from), { to, amount }), from, 'send');
    return this.published(await this.publish(block, 'send'));
  }

  /** Receives every pending send of the account, oldest first; returns the new blocks' hashes. */
  async receiveAll(account: Account): Promise<string[]> {
    const pending = await this.call<{ blocks: Record<string, string[]> }>('POST', '/wallet/pending', { address: account.address });
    const done: string[] = [];
    for (const source of pending.data.blocks[account.address] ?? []) {
      const sent = await this.call('POST', '/block/info', { hash: source });
      const block = await this.complete(buildReceiveBlock(await this.head(account), { sourceHash: source, amount: BigInt(sent.data.amount) }), account, 'receive');
      done.push(this.published(await this.publish(block)));
    }
    return done;
  }

  private published(reply: Reply): string {
    if (!reply.success) throw new Error(`publish refused: ${JSON.stringify(reply.error)}`);
    return reply.data.hash as string;
  }
}

/** A new account from a random seed. */
export const newAccount = (): Account => deriveAccount({ seed: generateSeed(), index: 0 });

/** A sandbox on an ephemeral port and a client with a fresh API key. */
export async function sandboxWithClient(): Promise<{ sb: RunningSandbox; client: SandboxClient }> {
  const sb = await startSandbox({ port: 0 });
  return { sb, client: await SandboxClient.withNewKey(sb.url) };
}
