import { readFileSync } from 'node:fs';
import { startCommand, type RunningCommand } from './serve.js';

/** `checkout serve --json` as a child process, with its API called by its token (as a shop's backend does). */
export interface ShopServe {
  server: RunningCommand<{ url: string; token_file: string }>;
  /** The `data` of an API answer; throws on an error answer. */
  api<T = Record<string, unknown>>(path: string, body?: Record<string, unknown>): Promise<T>;
  stop(): Promise<void>;
}

export async function startShopServe(args: string[], env: NodeJS.ProcessEnv): Promise<ShopServe> {
  const server = await startCommand<{ url: string; token_file: string }>(['checkout', 'serve', '--json', ...args], env);
  const token = readFileSync(server.printed.token_file, 'utf8').trim();
  return {
    server,
    api: async <T>(path: string, body?: Record<string, unknown>): Promise<T> => {
      const response = await fetch(`${server.printed.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const answer = (await response.json()) as { success: boolean; data: T; error?: unknown };
      if (!answer.success) throw new Error(`${path}: ${JSON.stringify(answer.error)}`);
      return answer.data;
    },
    stop: () => server.stop(),
  };
}
