import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { nativeKernels, validateWork } from '../../../src/work/index.js';
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

  it.skipIf(nativeKernels() === undefined)('work bench --choose measures every native kernel, keeps the fastest in the config dir, and shows the table and the choice', async () => {
    type Bench = { engine: string; kernels: { chosen_by: string; measured_at: string; one: string; all: string; rates: { kernel: string; threads: number; hashes_per_second: number }[] } };
    const chosen = await user.json<Bench>(['work', 'bench', '--choose', '--seconds', '0.5']);
    expect(chosen).toMatchObject({ _code: 0, engine: 'native', kernels: { chosen_by: 'measurement' } });
    const names = nativeKernels()?.map((k) => k.name) ?? [];
    expect(new Set(chosen.kernels.rates.map((r) => r.kernel))).toEqual(new Set(names));
    const best = (threads: number): string => [...chosen.kernels.rates].filter((r) => r.threads === threads).sort((a, b) => b.hashes_per_second - a.hashes_per_second)[0]?.kernel as string;
    expect([chosen.kernels.one, chosen.kernels.all]).toEqual([best(1), best(availableParallelism())]);
    expect(JSON.parse(await readFile(join(user.configDir, 'work-kernel.json'), 'utf8'))).toMatchObject({ one: chosen.kernels.one, all: chosen.kernels.all });
    // Kept: the next bench (and every search) uses it without measuring again.
    const human = await user.run(['work', 'bench', '--seconds', '0.5']);
    expect(human.stdout).toContain(`kernel ${chosen.kernels.one} on 1 thread, ${chosen.kernels.all} on ${availableParallelism()} (measured on this machine ${chosen.kernels.measured_at})`);
    for (const name of names) expect(human.stdout).toMatch(new RegExp(`^${name} +\\d+\\.\\d+ MH/s`, 'm'));
  });
});

async function apiKey(): Promise<string> {
  return ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
}
