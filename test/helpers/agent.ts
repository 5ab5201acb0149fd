import { startCommand, type RunningCommand } from './serve.js';

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
