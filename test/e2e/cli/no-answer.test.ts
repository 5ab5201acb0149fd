import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';

// A service that never answers: the balance route of the service hangs behind the proxy (it accepts the
// request and says nothing). Every other route passes, so the wallet exists and only the wait is tested.

let sb: RunningSandbox;
let hanging: FaultyProxy;
let user: CliUser;

beforeAll(async () => {
  sb = await sandbox();
  hanging = await startFaultyProxy(sb.url, (_method, path) => (path.startsWith('/wallet/balance/') ? 'hang' : 'pass'));
  ({ user } = await userWithWallet(hanging.url));
});

afterAll(async () => {
  await hanging?.close();
  await sb?.close();
});

const where = (): RegExp => new RegExp(`GET ${hanging.url.replace(/\./g, '\\.')}/wallet/balance/nano_[13][a-z0-9]{59}`);

describe('a service that does not answer', () => {
  it.skipIf(ptyMissing !== undefined)('on a terminal: a spinner names who is awaited and which attempt, then the bound ends it (exit 5)', async () => {
    // Attempts of 2 s, a bound of 6 s: attempt 1, a 1 s wait, attempt 2, then the bound.
    const terminal = onTerminal(['balance'], { ...user.env, NANOPAY_TIMEOUT: '6', NANOPAY_TIMEOUT_MS: '2000' }, { columns: 200 });
    await terminal.waitFor(/Waiting for the service \(GET [^)]*\/wallet\/balance\/nano_\w+\): attempt 1 of 3, \d+ s/, 20_000);
    await terminal.waitFor(/Waiting for the service \([^)]*\): attempt 2 of 3/, 20_000);
    expect(await terminal.exited).toBe(5);
    expect(terminal.output).toMatch(new RegExp(`The service did not answer ${where().source} within 6 s \\(2 of 3 attempts\\)`));
    expect(terminal.output).toContain('The bound is --timeout or NANOPAY_TIMEOUT.');
  });

  it('with --json: warnings on stderr, one JSON error document on stdout, and --timeout is the bound', async () => {
    const result = await user.run(['balance', '--timeout', '4s', '--json'], { env: { NANOPAY_TIMEOUT_MS: '1500', NANOPAY_TIMEOUT: '50' } });
    expect(result.code).toBe(5);
    const document = JSON.parse(result.stdout) as { error: { code: string; message: string } };
    expect(document.error.code).toBe('REQUEST_ERROR');
    expect(document.error.message).toMatch(new RegExp(`^The service did not answer ${where().source} within 4 s \\(\\d of 3 attempts\\)`));
    expect(result.stderr).toMatch(new RegExp(`^Warning: the service did not answer ${where().source} \\(ETIMEDOUT\\); attempt 2 of 3 in 1 s$`, 'm'));
    // No spinner off a terminal.
    expect(result.stderr).not.toContain('Waiting for');
  });

  it('without a terminal, human output: the same warnings on stderr, nothing on stdout', async () => {
    const result = await user.run(['balance', '--timeout', '3'], { env: { NANOPAY_TIMEOUT_MS: '1000' } });
    expect(result.code).toBe(5);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^Warning: the service did not answer .*attempt 2 of 3 in 1 s$/m);
    expect(result.stderr).toMatch(/Error \[REQUEST_ERROR\] The service did not answer .* within 3 s/);
  });

  it('refuses a bound that is not a duration, from the flag or the variable (exit 2)', async () => {
    const flag = await user.json<{ error: { code: string; message: string } }>(['balance', '--timeout', '0']);
    expect(flag._code).toBe(2);
    expect(flag.error.message).toContain('--timeout "0" is not a timeout');
    const variable = await user.json<{ error: { code: string; message: string } }>(['balance'], { env: { NANOPAY_TIMEOUT: 'soon' } });
    expect(variable._code).toBe(2);
    expect(variable.error.message).toContain('NANOPAY_TIMEOUT "soon" is not a timeout');
  });
});
