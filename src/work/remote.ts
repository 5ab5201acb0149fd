import { NanoPayError, redactUrl } from '../errors.js';
import { validateWork } from './pow.js';

export interface RemoteOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Told about each server that failed, and why (for logs and progress). */
  onFailure?: (server: string, reason: string) => void;
}

/** Asks one server with the node's work_generate action; the nonce is checked locally before use. */
async function ask(server: string, root: string, threshold: string, options: RemoteOptions): Promise<string> {
  const signals = [AbortSignal.timeout(options.timeoutMs), ...(options.signal === undefined ? [] : [options.signal])];
  const response = await fetch(server, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'work_generate', hash: root, difficulty: threshold }),
    signal: AbortSignal.any(signals),
  });
  const body = (await response.json()) as { work?: unknown; error?: unknown };
  if (typeof body.work !== 'string' || !/^[0-9a-fA-F]{16}$/.test(body.work)) {
    throw new Error(typeof body.error === 'string' ? body.error : `no work in the answer (HTTP ${response.status})`);
  }
  const work = body.work.toLowerCase();
  if (!validateWork(root, work, threshold)) throw new Error(`returned work ${work} that does not meet ${threshold}`);
  return work;
}

/** Tries each server in order; WORK_SERVER_ERROR when none gives valid work in time. */
export async function remoteWork(servers: string[], root: string, threshold: string, options: RemoteOptions): Promise<string> {
  const reasons: string[] = [];
  for (const server of servers) {
    if (options.signal?.aborted) throw new NanoPayError('CANCELLED', 'Proof of work cancelled');
    try {
      return await ask(server, root, threshold, options);
    } catch (error) {
      const reason = error instanceof Error && error.name === 'TimeoutError' ? `no answer in ${options.timeoutMs} ms` : (error as Error).message;
      options.onFailure?.(server, reason);
      reasons.push(redactUrl(`${server}: ${reason}`));
    }
  }
  throw new NanoPayError('WORK_SERVER_ERROR', `No work server gave valid work (${reasons.join('; ') || 'none configured'})`, {
    hint: 'Check NANO_WORK_SERVER_URL, or use NANO_WORK_MODE=auto to fall back to this machine.',
  });
}
