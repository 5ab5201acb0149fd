import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN } from '../../helpers/processes/cli.js';
import { tempDir } from '../../helpers/processes/temp.js';

/** Starts `nanopay sandbox` like a user, returning its URL (from --json) and a way to stop it. */
async function startCommand(dataDir: string): Promise<{ url: string; stop(): Promise<number | null> }> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--data-dir', dataDir, '--quiet', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve((JSON.parse(out.split('\n')[0] as string) as { url: string }).url);
    });
    child.on('close', (code) => reject(new Error(`sandbox exited ${code}`)));
  });
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  return {
    url,
    stop: () => {
      child.kill('SIGTERM');
      return closed;
    },
  };
}

describe('nanopay sandbox', () => {
  it('starts, answers POST /wallet/create, stops on a signal and keeps its state across restarts', async () => {
    const dataDir = await tempDir('nanopay-sandbox-cmd-');
    const first = await startCommand(dataDir);
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const created = (await (await fetch(`${first.url}/wallet/create`, { method: 'POST' })).json()) as { success: boolean; data: { address: string; api_key: string } };
    expect(created.success).toBe(true);
    expect(created.data.address).toMatch(/^nano_/);
    expect(await first.stop()).toBe(0);

    const second = await startCommand(dataDir);
    const credits = await fetch(`${second.url}/credits/info`, { headers: { authorization: `Bearer ${created.data.api_key}` } });
    expect(credits.status).toBe(200);
    expect(await second.stop()).toBe(0);
  });
});
