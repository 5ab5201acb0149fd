import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { newUser, type CliUser } from '../../helpers/processes/cli.js';

// Two commands that change the settings at once each keep their change (config.json is read, changed and written
// holding its lock): without it, the later write put back what it had read, and the other's change was lost.
let user: CliUser | undefined;
afterAll(async () => {
  if (user !== undefined) await rm(user.configDir, { recursive: true, force: true });
});

describe('settings changed by several processes at once', () => {
  it('keeps every change of six concurrent config set', async () => {
    user = await newUser('http://127.0.0.1:9');
    const settings: [string, string][] = [
      ['node-url', 'http://127.0.0.1:7076'],
      ['node-ws-url', 'ws://127.0.0.1:7078'],
      ['receive-minimum', '0.001'],
      ['rate-cache', '2m'],
      ['work-mode', 'cpu'],
      ['x402-network', 'nano:dev'],
    ];
    const done = await Promise.all(settings.map(([name, value]) => (user as CliUser).run(['config', 'set', name, value])));
    expect(done.map((d) => [d.code, d.stderr])).toEqual(settings.map(() => [0, '']));
    const listed = await user.json<{ settings: { name: string; value: string | null }[] }>(['config', 'list']);
    const values = Object.fromEntries(listed.settings.map((s) => [s.name, s.value]));
    for (const [name, value] of settings) expect(values[name], name).toBe(value);
  });
});
