import { existsSync } from 'node:fs';
import { lstat, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { tempDir } from '../../helpers/processes/temp.js';

let dir: string;
let path: string;
/** scrypt's cost for the tests whose subject is not the KDF (the first two tests use the default, 2^17). */
const CHEAP = 2 ** 10;
const SECRET = 'C0CB015BCA0834AC827B6259B48C052F7D62692DA1FA21DCDF755CFD27ACBE43';

beforeEach(async () => {
  dir = await tempDir('nanopay-ks-');
  path = join(dir, 'store', 'keystore.json');
});

describe('KeyStore', () => {
  it('keeps secrets encrypted, private and readable with the password', async () => {
    const store = await KeyStore.create(path, 'correct horse');
    await store.set('seed', SECRET);
    const bytes = await readFile(path, 'utf8');
    expect(bytes).not.toContain(SECRET);
    expect(bytes).not.toContain(SECRET.toLowerCase());
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'store'))).mode & 0o777).toBe(0o700);
    const header = JSON.parse(bytes) as { kdf: { N: number; r: number; p: number } };
    expect(header.kdf).toMatchObject({ N: 2 ** 17, r: 8, p: 1 });
    const reopened = await KeyStore.open(path, 'correct horse');
    expect(reopened.get('seed')).toBe(SECRET);
  });

  it('a wrong password fails with WRONG_PASSWORD and leaves the file byte-identical', async () => {
    const store = await KeyStore.create(path, 'right', CHEAP);
    await store.set('seed', SECRET);
    const before = await readFile(path);
    await expect(KeyStore.open(path, 'wrong')).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
    await expect(KeyStore.openOrCreate(path, 'wrong')).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
    expect(await readFile(path)).toEqual(before);
  });

  it('reports a damaged file instead of replacing it', async () => {
    await (await KeyStore.create(path, 'pw', CHEAP)).set('seed', SECRET);
    await writeFile(path, '{"format": "nanopay-keystore-1", "kdf": ');
    await expect(KeyStore.open(path, 'pw')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    await expect(KeyStore.create(path, 'pw')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await readFile(path, 'utf8')).toBe('{"format": "nanopay-keystore-1", "kdf": ');
  });

  it('detects a tampered header or secret', async () => {
    // The header is authenticated whatever its cost: a store at twice the lowest cost, weakened to the lowest.
    await (await KeyStore.create(path, 'pw', 2 * CHEAP)).set('seed', SECRET);
    const file = JSON.parse(await readFile(path, 'utf8')) as { kdf: { N: number }; secrets: Record<string, { data: string }> };
    const weakened = { ...file, kdf: { ...file.kdf, N: CHEAP } };
    await writeFile(path, JSON.stringify(weakened));
    await expect(KeyStore.open(path, 'pw')).rejects.toMatchObject({ code: 'WRONG_PASSWORD' });
    const seed = file.secrets.seed as { data: string };
    const flipped = Buffer.from(seed.data, 'base64');
    flipped[0] = (flipped[0] as number) ^ 1;
    await writeFile(path, JSON.stringify({ ...file, secrets: { seed: { ...seed, data: flipped.toString('base64') } } }));
    await expect(KeyStore.open(path, 'pw')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
  });

  it('records a lower cost it was made with, and refuses one below 2^10 or not a power of two', async () => {
    await (await KeyStore.create(path, 'pw', CHEAP)).set('seed', SECRET);
    expect((JSON.parse(await readFile(path, 'utf8')) as { kdf: { N: number } }).kdf.N).toBe(CHEAP);
    expect((await KeyStore.open(path, 'pw')).get('seed')).toBe(SECRET);
    const other = join(dir, 'other.json');
    for (const N of [2 ** 9, 3000, 2 ** 30]) await expect(KeyStore.create(other, 'pw', N)).rejects.toThrow(RangeError);
    expect(await KeyStore.exists(other)).toBe(false);
  });

  it('a write keeps what another writer stored since this store was read', async () => {
    await KeyStore.create(path, 'pw', CHEAP);
    // Two commands that unlocked the same store, then each stored a wallet.
    const [one, two] = await Promise.all([KeyStore.open(path, 'pw'), KeyStore.open(path, 'pw')]);
    await Promise.all([one.set('a', '1'), two.set('b', '2')]);
    await one.set('c', '3');
    await two.delete(['a']);
    const reopened = await KeyStore.open(path, 'pw');
    expect(Object.fromEntries(reopened.ids().map((id) => [id, reopened.get(id)]))).toEqual({ b: '2', c: '3' });
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('a store replaced or removed by another process is not written over; nothing is written', async () => {
    const stale = await (async () => {
      await (await KeyStore.create(path, 'pw', CHEAP)).set('seed', SECRET);
      return KeyStore.open(path, 'pw');
    })();
    await rm(path);
    await expect(stale.set('other', '1')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(existsSync(path)).toBe(false);
    await (await KeyStore.create(path, 'pw', CHEAP)).set('seed', 'a new one');
    const replaced = await readFile(path);
    await expect(stale.set('other', '1')).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await readFile(path)).toEqual(replaced);
  });

  it('deletes secrets', async () => {
    const store = await KeyStore.create(path, 'pw', CHEAP);
    await store.set('a', '1');
    await store.set('b', '2');
    await store.delete(['a']);
    const reopened = await KeyStore.open(path, 'pw');
    expect(reopened.ids()).toEqual(['b']);
  });
});

describe('KeyStore against a tampered file', () => {
  it.each([
    ['N = 2^40', { N: 2 ** 40 }],
    ['N = 1000', { N: 1000 }],
    ['p = 2^30', { p: 2 ** 30 }],
    ['r = 0', { r: 0 }],
  ])('damaged KDF parameters (%s) are STORE_CORRUPT before scrypt runs, the file untouched', async (_name, change) => {
    await (await KeyStore.create(path, 'right', CHEAP)).set('seed', SECRET);
    const file = JSON.parse(await readFile(path, 'utf8')) as { kdf: Record<string, number> };
    file.kdf = { ...file.kdf, ...change };
    await writeFile(path, JSON.stringify(file));
    const before = await readFile(path);
    await expect(KeyStore.open(path, 'right')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    expect(await readFile(path)).toEqual(before);
  });

  it('a symbolic link in place of the key store is refused, never followed nor replaced', async () => {
    const real = join(dir, 'elsewhere.json');
    await (await KeyStore.create(real, 'right', CHEAP)).set('seed', SECRET);
    await mkdir(join(dir, 'store'), { recursive: true });
    await symlink(real, path);
    await expect(KeyStore.open(path, 'right')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    await expect(KeyStore.openOrCreate(path, 'right')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    expect((await lstat(path)).isSymbolicLink()).toBe(true);
  });
});
