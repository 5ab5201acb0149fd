import { NanoPayError, redactUrl } from '../errors.js';
import { exchange } from '../api/transport.js';
import { validateWork } from './pow.js';

export interface RemoteOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Told about each server that failed, and why (for logs and progress). */
  onFailure?: (server: string, reason: string) => void;
}

/** A work server reached by other means than a plain URL (a node with its own auth). */
export interface WorkServer {
  name: string;
  generate(root: string, threshold: string): Promise<string>;
}

/** Asks one URL with the node's work_generate action (through a proxy where the environment names one). */
async function askUrl(server: string, root: string, threshold: string, options: RemoteOptions): Promise<string> {
  let answer;
  try {
    answer = await exchange({
      url: server,
      method: 'POST',
      headers: {},
      body: { action: 'work_generate', hash: root, difficulty: threshold },
      timeoutMs: options.timeoutMs,
      retries: 0,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      party: 'work server',
      where: `work_generate at ${redactUrl(server)}`,
      hint: 'Check NANO_WORK_SERVER_URL.',
    });
  } catch (error) {
    if (error instanceof NanoPayError && / did not answer .* in time/.test(error.message)) throw new Error(`no answer in ${options.timeoutMs} ms${/\(through the proxy [^)]*\)/.exec(error.message)?.[0].replace(/^/, ' ') ?? ''}`);
    throw error;
  }
  let body: { work?: unknown; error?: unknown };
  try {
    body = JSON.parse(answer.text) as { work?: unknown; error?: unknown };
  } catch {
    throw new Error(`an answer that is not JSON (HTTP ${answer.status})`);
  }
  if (typeof body.work !== 'string') throw new Error(typeof body.error === 'string' ? body.error : `no work in the answer (HTTP ${answer.status})`);
  return body.work;
}

/** Asks one server; whatever it is, the nonce is checked locally before use. */
async function ask(server: string | WorkServer, root: string, threshold: string, options: RemoteOptions): Promise<string> {
  const answered = typeof server === 'string' ? await askUrl(server, root, threshold, options) : await withTimeout(server.generate(root, threshold), options);
  if (!/^[0-9a-fA-F]{16}$/.test(answered)) throw new Error('no work in the answer');
  const work = answered.toLowerCase();
  if (!validateWork(root, work, threshold)) throw new Error(`returned work ${work} that does not meet ${threshold}`);
  return work;
}

function withTimeout<T>(promise: Promise<T>, options: RemoteOptions): Promise<T> {
  const signal = AbortSignal.any([AbortSignal.timeout(options.timeoutMs), ...(options.signal === undefined ? [] : [options.signal])]);
  return new Promise<T>((resolve, reject) => {
    const stop = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

/** Tries each server in order; WORK_SERVER_ERROR when none gives valid work in time. */
export async function remoteWork(servers: readonly (string | WorkServer)[], root: string, threshold: string, options: RemoteOptions): Promise<string> {
  const reasons: string[] = [];
  for (const server of servers) {
    if (options.signal?.aborted) throw new NanoPayError('CANCELLED', 'Proof of work cancelled');
    try {
      return await ask(server, root, threshold, options);
    } catch (error) {
      const reason = error instanceof Error && error.name === 'TimeoutError' ? `no answer in ${options.timeoutMs} ms` : (error as Error).message;
      const name = typeof server === 'string' ? server : server.name;
      options.onFailure?.(name, reason);
      reasons.push(redactUrl(`${name}: ${reason}`));
    }
  }
  throw new NanoPayError('WORK_SERVER_ERROR', `No work server gave valid work (${reasons.join('; ') || 'none configured'})`, {
    hint: 'Check NANO_WORK_SERVER_URL, or use NANO_WORK_MODE=auto to fall back to this machine.',
  });
}
