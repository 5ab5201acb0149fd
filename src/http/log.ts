import { randomFillSync } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export type LogLevel = 'info' | 'warn' | 'error';

export type LogFormat = 'text' | 'json';

/** What a structured log shows of a line, besides the time and the line itself (`message`). */
export interface LogEntry {
  /** What happened, in snake_case: request, draining, webhook_given_up… */
  event: string;
  level?: LogLevel;
  /** Never a secret: no token, key, query string or header value. */
  fields?: Readonly<Record<string, string | number | boolean | undefined>>;
}

/**
 * Where a server and its parts write: a line for people, and what a
 * structured log (--log-format json) shows of it. A line without an entry is
 * event "log" at level info. A plain `(line) => void` is one too.
 */
export type ServerLog = (line: string, entry?: LogEntry) => void;

/**
 * The log of a server command on `write` (stderr): `TIME LINE` a line (text),
 * or one JSON object a line with time, level, event, the entry's fields and
 * the line as `message` (json).
 */
export function serverLog(format: LogFormat, write: (text: string) => void): ServerLog {
  return (line, entry) => {
    const time = new Date().toISOString();
    if (format === 'text') return write(`${time} ${line}\n`);
    write(`${JSON.stringify({ time, level: entry?.level ?? 'info', event: entry?.event ?? 'log', ...entry?.fields, message: line })}\n`);
  };
}

/** A request id a client may choose (X-Request-Id): short, and nothing a log could be confused by. */
const GIVEN_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** Random bytes for request ids, drawn 4 KiB at a time: a call to the system's generator for each request cost more than the rest of its id. */
const pool = Buffer.alloc(4096);
let taken = pool.length;

/** The request's id: the client's X-Request-Id when it is well-formed and short, else a new one (16 random hex digits). */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  if (typeof given === 'string' && GIVEN_ID.test(given)) return given;
  if (taken + 8 > pool.length) {
    randomFillSync(pool);
    taken = 0;
  }
  taken += 8;
  return pool.toString('hex', taken - 8, taken);
}
