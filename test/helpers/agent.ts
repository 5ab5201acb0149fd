import { spawn, type ChildProcess } from 'node:child_process';
import { BIN } from './cli.js';

export interface AgentProcess {
  url: string;
  address: string;
  started: Record<string, unknown>;
  child: ChildProcess;
  stderr: () => string;
  stop(): Promise<void>;
}

/** Runs `nanopay agent` as a child process on a free port and waits for its --json line. */
export async function startAgentProcess(env: NodeJS.ProcessEnv, args: string[] = []): Promise<AgentProcess> {
  const child = spawn(process.execPath, [BIN, 'agent', '--port', '0', '--json', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined) {
        try {
          resolve(JSON.parse(line) as Record<string, unknown>);
        } catch {
          reject(new Error(`agent printed ${line}`));
        }
      }
    });
    child.on('close', (code) => reject(new Error(`agent exited ${code}: ${err}${out}`)));
  });
  return {
    url: started.url as string,
    address: started.address as string,
    started,
    child,
    stderr: () => err,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

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
