import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { ModelConfig } from '../../../src/agent/model.js';
import { startAgent, type AgentOptions, type RunningAgent } from '../../../src/agent/server.js';
import { confirmAbovePolicy, strictHolder } from '../../../src/agent/wallet-holder.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { startCommand, type RunningCommand } from '../processes/serve.js';
import { tempDir } from '../processes/temp.js';

export interface AgentProcess extends RunningCommand {
  url: string;
  address: string;
  started: Record<string, unknown>;
}

/** Runs `nanopay agent` as a child process on a free port and waits for its --json line. */
export async function startAgentProcess(env: NodeJS.ProcessEnv, args: string[] = []): Promise<AgentProcess> {
  const running = await startCommand(['agent', '--port', '0', '--json', ...args], env);
  return { ...running, started: running.printed, url: running.printed.url as string, address: running.printed.address as string };
}

export interface InProcessAgent extends RunningAgent {
  address: string;
  /** The agent's own directory (its key store, settings and password file). */
  dir: string;
  password: string;
  /** Every line the agent logged (the command writes them to stderr). */
  log: string[];
}

export interface InProcessAgentOptions {
  /** The directory of an earlier agent, to start again over it (a restart). */
  dir?: string;
  /** The holder's environment on top of NANOPAY_API_URL (e.g. NANOPAY_API_KEY). */
  env?: NodeJS.ProcessEnv;
  confirmAboveRaw?: bigint;
  allowOrigins?: string[];
  model?: ModelConfig;
  /** Who may call, as `nanopay agent` sets it: a bearer token, and other users' connections refused. */
  token?: string;
  onlyUser?: AgentOptions['onlyUser'];
  /** agent --chat-confirms: the chat's user approves the spends the chat held. */
  chatConfirms?: boolean;
}

/**
 * The agent's server started in this process over a strict holder, as `nanopay agent --strict`
 * builds it, but with its key store made beforehand at scrypt's lowest accepted cost (and its
 * password file written): strict mode unlocks the store on every request, which at the real
 * cost is half a second of CPU each. The command's own first start is tested end to end.
 * Given the `dir` of an earlier agent, it starts over that directory as it is.
 */
export async function startInProcessAgent(apiUrl: string, options: InProcessAgentOptions = {}): Promise<InProcessAgent> {
  const dir = options.dir ?? (await cheapAgentDir());
  const password = (await readFile(join(dir, 'agent-password'), 'utf8')).trim();
  const log: string[] = [];
  const holder = await strictHolder({
    dir,
    env: { NANOPAY_API_URL: apiUrl, ...options.env },
    log: (line) => log.push(line),
    ...(options.confirmAboveRaw === undefined ? {} : { policy: confirmAbovePolicy(options.confirmAboveRaw) }),
  });
  const agent = await startAgent({
    host: '127.0.0.1',
    port: 0,
    holder,
    log: (line) => log.push(line),
    ...(options.confirmAboveRaw === undefined ? {} : { confirmAboveRaw: options.confirmAboveRaw }),
    ...(options.allowOrigins === undefined ? {} : { allowOrigins: options.allowOrigins }),
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.onlyUser === undefined ? {} : { onlyUser: options.onlyUser }),
    ...(options.chatConfirms === undefined ? {} : { chatConfirms: options.chatConfirms }),
  });
  return { ...agent, address: await holder.address(), dir, password, log };
}

/** A strict agent's directory before its first start: its password file and an empty key store at the lowest cost. */
async function cheapAgentDir(): Promise<string> {
  const dir = await tempDir('nanopay-agent-');
  const password = randomBytes(32).toString('base64url');
  await writeFile(join(dir, 'agent-password'), `${password}\n`, { mode: 0o600 });
  await KeyStore.create(keystorePath(dir), password, 2 ** 10);
  return dir;
}

type Step = (r: ModelRequest) => { status?: number; message?: unknown; raw?: string };

export interface ModelRequest {
  text: string;
  body: { model: string; messages: { role: string; content?: string | null; tool_call_id?: string; tool_calls?: unknown[] }[]; tools: { type: string; function: { name: string; parameters: unknown } }[] };
  authorization: string | undefined;
}

/** A stand-in for an OpenAI-compatible endpoint: answers each request with the next scripted reply. */
export class ScriptedModel {
  readonly received: ModelRequest[] = [];
  private script: Step[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let text = '';
      req.on('data', (d: Buffer) => (text += d.toString()));
      req.on('end', () => {
        const received: ModelRequest = { text, body: JSON.parse(text) as ModelRequest['body'], authorization: req.headers.authorization };
        this.received.push(received);
        const step = this.script.shift();
        const reply = step === undefined ? { status: 500, raw: 'unscripted request' } : step(received);
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
        res.end(reply.raw ?? JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: reply.message, finish_reason: 'stop' }] }));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}/v1`;
  }

  then(...steps: Step[]): void {
    this.script.push(...steps);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** A model reply that calls tools: [id, function name, arguments as written]. */
export const toolCalls = (...calls: [string, string, string][]) => (): { message: unknown } => ({
  message: { role: 'assistant', content: null, tool_calls: calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } })) },
});

/** A model reply that only talks. */
export const says = (content: string) => (): { message: unknown } => ({ message: { role: 'assistant', content } });

export type StreamEvent = { type: string } & Record<string, any>;

/**
 * A chat answer read as it arrives (Server-Sent Events or NDJSON): `next()`
 * resolves with each event as soon as its bytes are in, not at the end.
 */
export class EventReader {
  private buffer = '';
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();

  constructor(
    readonly response: Response,
    private readonly format: 'sse' | 'ndjson',
  ) {
    if (response.body === null) throw new Error('no body');
    this.reader = response.body.getReader();
  }

  async next(): Promise<StreamEvent | undefined> {
    for (;;) {
      const separator = this.format === 'sse' ? '\n\n' : '\n';
      const at = this.buffer.indexOf(separator);
      if (at >= 0) {
        const frame = this.buffer.slice(0, at);
        this.buffer = this.buffer.slice(at + separator.length);
        if (this.format === 'ndjson') return JSON.parse(frame) as StreamEvent;
        const name = /^event: (.+)$/m.exec(frame)?.[1];
        const event = JSON.parse(/^data: (.+)$/m.exec(frame)?.[1] ?? 'null') as StreamEvent;
        if (event.type !== name) throw new Error(`SSE event name ${name} differs from its type ${event.type}`);
        return event;
      }
      const { value, done } = await this.reader.read();
      if (done) return undefined;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  async all(): Promise<StreamEvent[]> {
    const events: StreamEvent[] = [];
    for (let e = await this.next(); e !== undefined; e = await this.next()) events.push(e);
    return events;
  }
}

/** POSTs a chat turn and returns the stream reader once the headers are in. */
export async function chat(url: string, body: unknown, options: { format?: 'sse' | 'ndjson'; headers?: Record<string, string> } = {}): Promise<EventReader> {
  const format = options.format ?? 'sse';
  const response = await fetch(`${url}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: format === 'sse' ? 'text/event-stream' : 'application/x-ndjson', ...options.headers },
    body: JSON.stringify(body),
  });
  return new EventReader(response, format);
}
