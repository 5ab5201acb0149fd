import { spawn } from 'node:child_process';
import { symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { docBlocks } from '../../helpers/processes/docs.js';
import { tempDir } from '../../helpers/processes/temp.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const PORT = 7076;

/** The README's five-minute tour: its block marked test=readme-quickstart. */
function quickStart(): string {
  const [block, ...more] = docBlocks('README.md', 'readme-quickstart');
  if (more.length > 0 || block?.lang !== 'sh') throw new Error('README: one sh block is the quick start');
  return block.code;
}

/** Whether the sandbox's default port is free (another sandbox may be running on this machine). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const free = await portFree(PORT);
if (!free) console.warn(`readme-quickstart.test.ts: port ${PORT} is in use, so the README's quick start was not run`);

let sandboxPid: number | undefined;
afterAll(() => {
  // Only if the script failed before its own `kill %1`.
  if (sandboxPid !== undefined) {
    try {
      process.kill(sandboxPid);
    } catch {
      // Already gone.
    }
  }
});

describe.skipIf(!free)("README's quick start", () => {
  it('runs as written in one bash shell, from a clone, with a fresh config dir, and stops the sandbox', async () => {
    const script = quickStart();
    expect(script).toContain('sandbox --quiet &');
    expect(script).toContain('kill %1');
    // "From the clone": a directory with the clone's bin/ (the sandbox keeps its ledger in the current directory).
    const dir = await tempDir('nanopay-readme-');
    await symlink(join(root, 'bin'), join(dir, 'bin'));
    await writeFile(join(dir, 'quickstart.sh'), script);
    const home = join(dir, 'home');
    const env = { PATH: process.env.PATH, HOME: home, NANOPAY_CONFIG_DIR: join(home, 'nanopay'), NO_COLOR: '1' };
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn('bash', ['quickstart.sh'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        sandboxPid ??= Number(/kill (\d+)/.exec(stdout)?.[1]) || undefined;
      });
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    // Nothing on stderr but the marks of the commands that used the sandbox's test money.
    expect(result.stderr).toContain("[sandbox: these amounts are test money on nanopay's sandbox, not real XNO]\n");
    expect(result.stderr.replace(/^\[sandbox: .*\]\n/gm, '')).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`nanopay sandbox listening on http://127.0.0.1:${PORT}`);
    expect(result.stdout).toMatch(/Stop it: {2}Ctrl-C, or kill \d+/);
    expect(result.stdout).toContain('Created wallet "default"');
    expect(result.stdout).toMatch(/^Balance: 10 XNO$/m);
    // The request's amount is adjusted: 0.5 and a few raw of its own.
    expect(result.stdout).toMatch(/^Pay exactly 0\.5\d*[1-9] XNO to nano_/m);
    // kill %1 stopped the sandbox: the port is free again.
    await expect.poll(() => portFree(PORT), { timeout: 10_000 }).toBe(true);
    sandboxPid = undefined;
  });
});
