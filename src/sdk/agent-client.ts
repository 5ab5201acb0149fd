/** A failure reported by the agent (or the toolset), with the spec's code (and the approval id of an APPROVAL_REQUIRED in `details`). */
export class AgentError extends Error {
  constructor(
    readonly error_code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'AgentError';
  }
}

interface Envelope<T> {
  success: boolean;
  data: T | null;
  error: ({ error: string; message: string } & Record<string, unknown>) | null;
}

/**
 * The spec's client surface over a running `nanopay agent`
 * (default http://127.0.0.1:7860) or `nanopay serve` (same routes, http://127.0.0.1:3123). Amounts are XNO strings.
 */
export class AgentClient {
  readonly agent_url: string;

  constructor(agent_url = 'http://127.0.0.1:7860', private readonly options: { token?: string; timeoutMs?: number } = {}) {
    this.agent_url = agent_url.replace(/\/+$/, '');
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.agent_url}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
          ...(this.options.token === undefined ? {} : { authorization: `Bearer ${this.options.token}` }),
        },
        ...(method === 'POST' ? { body: JSON.stringify(body ?? {}) } : {}),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 120_000),
      });
    } catch (error) {
      throw new AgentError('REQUEST_ERROR', `Could not reach the agent at ${this.agent_url}: ${(error as Error).message}`);
    }
    let envelope: Envelope<T>;
    try {
      envelope = (await response.json()) as Envelope<T>;
    } catch {
      throw new AgentError('PARSE_ERROR', `The agent answered ${method} ${path} with something that is not JSON (HTTP ${response.status})`);
    }
    if (!envelope.success || envelope.data === null) {
      const { error, message, ...details } = envelope.error ?? { error: 'REQUEST_ERROR', message: `HTTP ${response.status}` };
      throw new AgentError(error, message, details);
    }
    return envelope.data;
  }

  async check_balance(auto_receive_pending_blocks = false): Promise<{ balance: string; address: string }> {
    const data = await this.call<{ balance: string; account: string }>('GET', `/wallet/balance?auto_receive_pending_blocks=${auto_receive_pending_blocks}`);
    return { balance: data.balance, address: data.account };
  }

  /**
   * A send; `approval_id` is the approval a person gave for exactly this send, after an APPROVAL_REQUIRED; `id` an
   * idempotency key: a retry with it (after a timeout) returns the first send (`repeated`), never a second one.
   */
  async pay(address: string, amount: string, options: { approval_id?: string; id?: string } = {}): Promise<{ hash: string; repeated: boolean }> {
    const data = await this.call<{ hash: string; repeated: boolean }>('POST', '/wallet/send', { recipient_address: address, amount, ...options });
    return { hash: data.hash, repeated: data.repeated };
  }

  async request_payment(amount: string): Promise<{ amount: string; receive_address: string }> {
    const data = await this.call<{ amount: string; receive_address: string }>('POST', '/payment/request', { amount });
    return { amount: data.amount, receive_address: data.receive_address };
  }
}
