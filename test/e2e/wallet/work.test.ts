import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { validateWork } from '../../../src/work/index.js';
import { userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';

let sb: RunningSandbox;
let user: CliUser;
const root = '718CC2121C3E641059BC1C2CFC45666C99E8AE922F7A807B7D07B62C995D79E2';

beforeAll(async () => {
  sb = await sandbox();
  ({ user } = await userWithWallet(sb.url, '1'));
});

afterAll(async () => {
  await sb?.close();
});

describe('work commands', () => {
  it('work generate and work validate', async () => {
    const generated = await user.json<{ work: string; threshold: string }>(['work', 'generate', '--root', root, '--threshold', 'fff0000000000000']);
    expect(validateWork(root, generated.work, 'fff0000000000000')).toBe(true);
    const bySubtype = await user.json<{ threshold: string }>(['work', 'generate', '--root', root, '--subtype', 'receive']);
    expect(bySubtype.threshold).toBe('f000000000000000');
    const valid = await user.json<{ valid: boolean }>(['work', 'validate', '--root', root, '--work', generated.work, '--threshold', 'fff0000000000000']);
    expect(valid).toMatchObject({ _code: 0, valid: true });
    const invalid = await user.run(['work', 'validate', '--root', root, '--work', '2bf29ef00786a6bc', '--threshold', 'fffffff800000000', '--json']);
    expect(invalid.code).toBe(3);
    expect(JSON.parse(invalid.stdout)).toMatchObject({ valid: false, value: 'ffffffd21c3933f4' });
    const bad = await user.run(['work', 'validate', '--root', 'xyz', '--work', '00', '--threshold', 'ff', '--json']);
    expect(JSON.parse(bad.stdout)).toMatchObject({ error: { code: 'INVALID_HEX' } });
  });

  it('work precache makes the next block\'s work, and the next send uses it', async () => {
    const cached = await user.json<{ root: string; work: string }>(['work', 'precache']);
    expect(cached._code).toBe(0);
    const sent = await user.json<{ hash: string }>(['send', 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj', '0.1', '--yes']);
    const block = (await (await fetch(`${sb.url}/block/info/${sent.hash}`, { headers: { 'x-api-key': await apiKey() } })).json()) as { data: { contents: { work: string; previous: string } } };
    expect(block.data.contents.previous).toBe(cached.root);
    expect(block.data.contents.work).toBe(cached.work);
  });

  it('work bench names the engine in use', async () => {
    const result = await user.json<{ engine: string; all_threads: number }>(['work', 'bench', '--seconds', '0.5']);
    expect(['native', 'wasm', 'js']).toContain(result.engine);
    expect(result.all_threads).toBeGreaterThan(0);
    const tooShort = await user.run(['work', 'bench', '--seconds', '0.4', '--json']);
    expect(tooShort.code).toBe(2);
    expect(JSON.parse(tooShort.stdout)).toMatchObject({ error: { code: 'USAGE', message: expect.stringContaining('from 0.5 to 3600') } });
  });
});

async function apiKey(): Promise<string> {
  return ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
}
