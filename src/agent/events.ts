import type { Call } from '../http/server.js';
import type { ApprovalShown } from '../ops/spending/approvals.js';

export interface ErrorBody {
  error: string;
  message: string;
}

/** What a chat turn tells its client, one event at a time. */
export type ChatEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_result'; id: string; name: string; ok: true; data: Record<string, unknown> }
  | { type: 'tool_result'; id: string; name: string; ok: false; error: ErrorBody }
  | { type: 'confirm'; id: string; name: string; arguments: Record<string, unknown>; token: string; approval_id: string; expires_in_s: number; text: string }
  | { type: 'approvals'; approvals: ApprovalShown[] }
  | { type: 'error'; error: ErrorBody }
  | { type: 'done' };

export interface EventStream {
  send(event: ChatEvent): void;
  end(): void;
}

/**
 * Opens the answer as a stream: NDJSON when the client asks for it (Accept:
 * application/x-ndjson, or ?format=ndjson), else Server-Sent Events. Headers
 * go out at once and every event is written as it happens.
 */
export function openEventStream(call: Call): EventStream {
  const ndjson = /application\/x-ndjson/i.test(String(call.headers.accept ?? '')) || call.query.get('format') === 'ndjson';
  const res = call.response;
  res.writeHead(200, {
    'content-type': ndjson ? 'application/x-ndjson; charset=utf-8' : 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    // Proxies such as nginx would otherwise hold the events back.
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  return {
    send: (event) => {
      if (res.writableEnded || res.destroyed) return;
      const json = JSON.stringify(event);
      res.write(ndjson ? `${json}\n` : `event: ${event.type}\ndata: ${json}\n\n`);
    },
    end: () => {
      if (!res.writableEnded) res.end();
    },
  };
}
