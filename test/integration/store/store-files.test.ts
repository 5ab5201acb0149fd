import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session } from '../../../src/ops/session.js';
import type { RequestRecord } from '../../../src/wallet/requests.js';
import { runCli } from '../../helpers/processes/cli.js';

/** The profile's files as a user has them: the old JSON requests file, the SQLite store. */
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'nanopay-store-files-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function configDir(): Promise<string> {
  const dir = join(root, randomUUID());
  await mkdir(dir, { mode: 0o700 });
  return dir;
}

const session = (dir: string) => new Session({ password: async () => 'unused', configDir: dir, env: {} });
const ADDRESS = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
const HASH = 'AB'.repeat(32);

function legacyRecords(): RequestRecord[] {
  return [
    { id: randomUUID(), address: ADDRESS, baseRaw: '1000', amountRaw: '1017', createdAt: '2026-01-01T00:00:00.000Z' },
    { id: randomUUID(), address: ADDRESS, baseRaw: '1000', amountRaw: '1018', createdAt: '2026-01-01T00:00:01.000Z', paidBy: [HASH], redirectUrl: 'https://shop.example/done' },
    { id: randomUUID(), address: ADDRESS, baseRaw: '5', amountRaw: '5', createdAt: '2026-01-01T00:00:02.000Z', fresh: { wallet: 'main', index: 3 }, expiresAt: '2026-01-02T00:00:00.000Z' },
  ];
}

async function writeLegacy(dir: string, records: RequestRecord[]): Promise<string> {
  await mkdir(join(dir, 'requests'), { recursive: true, mode: 0o700 });
  const path = join(dir, 'requests', 'default.json');
  await writeFile(path, JSON.stringify({ version: 1, requests: Object.fromEntries(records.map((r) => [r.id, r])) }, null, 2), { mode: 0o600 });
  return path;
}

describe('the old JSON requests file', () => {
  it('moves into the store on first use, once, losing nothing; the file is kept aside unchanged', async () => {
    const dir = await configDir();
    const records = legacyRecords();
    const path = await writeLegacy(dir, records);
    const text = await readFile(path, 'utf8');

    const store = await session(dir).dataStore();
    for (const record of records) expect(await store.requests.get(record.id)).toEqual(record);
    expect(await store.requests.claimedBy([HASH])).toEqual(new Map([[HASH, records[1]?.id]]));
    expect(await store.requests.freshIndexes('main')).toEqual([3]);
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(`${path}.migrated`, 'utf8')).toBe(text);
    await store.close();

    // Once: what is in the file kept aside is never read again.
    const later = { ...(records[0] as RequestRecord), id: randomUUID() };
    await writeFile(`${path}.migrated`, JSON.stringify({ version: 1, requests: { [later.id]: later } }));
    const again = await session(dir).dataStore();
    expect(await again.requests.get(later.id)).toBeUndefined();
    expect(await again.requests.get((records[0] as RequestRecord).id)).toEqual(records[0]);
    await again.close();
  });

  it('when damaged, is reported with its path and left where it is', async () => {
    const dir = await configDir();
    const path = await writeLegacy(dir, legacyRecords());
    await writeFile(path, '{"version":1,"requests":');
    await expect(session(dir).dataStore()).rejects.toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringContaining(path) });
    expect(await readFile(path, 'utf8')).toBe('{"version":1,"requests":');
    await expect(stat(`${path}.migrated`)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('a damaged store', () => {
  it('that is not a database is reported (code, path) by the CLI, and never recreated', async () => {
    const dir = await configDir();
    await mkdir(join(dir, 'store'), { mode: 0o700 });
    const path = join(dir, 'store', 'default.sqlite');
    const garbage = Buffer.alloc(8192, 'not a database ');
    await writeFile(path, garbage, { mode: 0o600 });
    const env = { PATH: process.env.PATH, HOME: dir, NANOPAY_CONFIG_DIR: dir, NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: 'http://127.0.0.1:9', NO_COLOR: '1' };
    const result = await runCli(['status', randomUUID(), '--json'], env);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout).error).toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringContaining(path) });
    expect(await readFile(path)).toEqual(garbage);
  });

  it('cut short is reported when a command reads what is missing, and left as it is', async () => {
    const dir = await configDir();
    const store = await session(dir).dataStore();
    const records = Array.from({ length: 2000 }, (_, i) => ({ id: randomUUID(), address: ADDRESS, baseRaw: '1', amountRaw: String(i + 2), createdAt: new Date(i).toISOString() }));
    await store.requests.importAll(records);
    await store.close();
    const path = join(dir, 'store', 'default.sqlite');
    const { size } = await stat(path);
    await truncate(path, Math.floor(size / 2 / 4096) * 4096);
    const cut = await readFile(path);
    const error = await (async () => {
      const reopened = await session(dir).dataStore();
      for (const record of records) await reopened.requests.get(record.id);
      await reopened.requests.importAll(records);
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringContaining(path) });
    expect((await readFile(path)).subarray(0, cut.length)).toEqual(cut);
  });

  it('that is a link is refused, not followed', async () => {
    const dir = await configDir();
    await mkdir(join(dir, 'store'), { mode: 0o700 });
    const elsewhere = join(dir, 'elsewhere.sqlite');
    await symlink(elsewhere, join(dir, 'store', 'default.sqlite'));
    await expect(session(dir).dataStore()).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    await expect(stat(elsewhere)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('is created private (0600) in a private directory', async () => {
    const dir = await configDir();
    await (await session(dir).dataStore()).close();
    expect((await stat(join(dir, 'store', 'default.sqlite'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'store'))).mode & 0o777).toBe(0o700);
  });

  it('syncs every commit, also when opened again in WAL mode (where the build of better-sqlite3 would sync only at checkpoints)', async () => {
    const dir = await configDir();
    for (let open = 0; open < 2; open++) {
      const store = await session(dir).dataStore();
      expect((store as unknown as { db: { pragma(sql: string, o: { simple: true }): unknown } }).db.pragma('synchronous', { simple: true })).toBe(2);
      await store.close();
    }
  });
});
