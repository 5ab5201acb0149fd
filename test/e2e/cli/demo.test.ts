import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('npm run demo', () => {
  it('runs the whole product flow against the embedded sandbox and exits 0', async () => {
    const script = fileURLToPath(new URL('../../../dist/demo/main.js', import.meta.url));
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1' };
    const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    // Nothing on stderr but the marks of commands that moved the sandbox's test money.
    expect(err).toContain("[sandbox: these amounts are test money on nanopay's sandbox, not real XNO]\n");
    expect(err.replace(/^\[sandbox: .*\]\n/gm, '')).toBe('');
    expect(code).toBe(0);
    for (const step of ['wallet create', 'request', 'status', 'pay', 'receive', 'credits topup', 'donate', 'Demo complete.']) {
      expect(out).toContain(step);
    }
    expect(out).toMatch(/Paid: The transaction has been paid/);
  });
});
