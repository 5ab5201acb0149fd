import { chmod, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigStore } from '../../../src/wallet/config.js';
import { ensurePrivateDir } from '../../../src/fs/secure-fs.js';
import { tempDir } from '../../helpers/processes/temp.js';

let root: string;
let dir: string;
let file: string;

beforeEach(async () => {
  root = await tempDir('nanopay-config-');
  dir = join(root, 'nanopay');
  file = join(dir, 'config.json');
});

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe('ConfigStore', () => {
  it('starts empty, writes a private file in a private dir, and reads back what it wrote', async () => {
    const store = new ConfigStore(dir);
    expect(store.profile('default')).toEqual({ wallets: {} });
    expect(store.profileNames()).toEqual([]);
    expect(await mode(dir)).toBe(0o700);
    const next = store.updateProfile('default', (p) => ({ ...p, apiUrl: 'http://127.0.0.1:1' }));
    expect(next).toEqual({ wallets: {}, apiUrl: 'http://127.0.0.1:1' });
    expect(await mode(file)).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ version: 1, profiles: { default: next } });
    expect(new ConfigStore(dir).profile('default')).toEqual(next);
    // The temporary file of the atomic write is gone (locks/ holds the lock writers take).
    expect(await readdir(dir)).toEqual(['config.json', 'locks']);
  });

  it("sees another store's writes (each read goes to the file)", () => {
    const one = new ConfigStore(dir);
    const two = new ConfigStore(dir);
    one.updateProfile('a', (p) => ({ ...p, receiveMinimum: '1' }));
    two.updateProfile('b', (p) => ({ ...p, receiveMinimum: '2' }));
    expect(one.profileNames().sort()).toEqual(['a', 'b']);
    expect(one.profile('a').receiveMinimum).toBe('1');
  });

  it('the change function gets a copy: throwing in it writes nothing', () => {
    const store = new ConfigStore(dir);
    store.updateProfile('default', (p) => ({ ...p, apiUrl: 'http://one' }));
    expect(() =>
      store.updateProfile('default', (p) => {
        p.apiUrl = 'http://two';
        throw new Error('no');
      }),
    ).toThrow('no');
    expect(store.profile('default').apiUrl).toBe('http://one');
  });

  const damaged = [
    ['not JSON', '{"version": 1, "profiles": {'],
    ['an array', '[]'],
    ['a string', '"hello"'],
    ['null', 'null'],
    ['an empty object', '{}'],
    ['another version', '{"version": 2, "profiles": {}}'],
    ['profiles as an array', '{"version": 1, "profiles": []}'],
    ['a profile without wallets', '{"version": 1, "profiles": {"default": {}}}'],
    ['a wallet that is not an object', '{"version": 1, "profiles": {"default": {"wallets": {"w": 3}}}}'],
    ['a wallet without accounts', '{"version": 1, "profiles": {"default": {"wallets": {"w": {"kind": "seed"}}}}}'],
  ];
  it.each(damaged)('refuses a file that is %s with STORE_CORRUPT and leaves it untouched', async (_name, text) => {
    await mkdir(dir, { recursive: true });
    await writeFile(file, text);
    expect(() => new ConfigStore(dir)).toThrow(expect.objectContaining({ code: 'STORE_CORRUPT', exitCode: 1 }));
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('refuses a file damaged after it was opened, before writing', async () => {
    const store = new ConfigStore(dir);
    await writeFile(file, '[]');
    expect(() => store.updateProfile('default', (p) => ({ ...p, apiUrl: 'http://x' }))).toThrow(expect.objectContaining({ code: 'STORE_CORRUPT' }));
    expect(await readFile(file, 'utf8')).toBe('[]');
  });

  it('refuses a symbolic link in place of config.json: neither read through nor written through', async () => {
    const elsewhere = join(root, 'elsewhere.json');
    const text = '{"version": 1, "profiles": {"default": {"wallets": {}, "apiUrl": "http://theirs"}}}';
    await writeFile(elsewhere, text);
    await mkdir(dir, { recursive: true });
    await symlink(elsewhere, file);
    expect(() => new ConfigStore(dir)).toThrow(expect.objectContaining({ code: 'STORE_CORRUPT', message: expect.stringContaining('symbolic link') }));
    expect(await readFile(elsewhere, 'utf8')).toBe(text);
  });

  it('refuses a symbolic link as the config dir and leaves its target as it was', async () => {
    const shared = join(root, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o755);
    await symlink(shared, dir);
    expect(() => new ConfigStore(dir)).toThrow(expect.objectContaining({ code: 'STORE_CORRUPT', message: expect.stringContaining('symbolic link') }));
    // With a trailing slash too, which would make a plain lstat follow the link.
    expect(() => new ConfigStore(`${dir}/`)).toThrow(expect.objectContaining({ code: 'STORE_CORRUPT' }));
    await expect(ensurePrivateDir(dir)).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    expect(await mode(shared)).toBe(0o755);
    expect(await readdir(shared)).toEqual([]);
  });

  it('refuses a dangling link as the config dir instead of creating its target', async () => {
    const missing = join(root, 'missing');
    await symlink(missing, dir);
    expect(() => new ConfigStore(dir)).toThrow(expect.objectContaining({ code: 'STORE_CORRUPT' }));
    await expect(stat(missing)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('still tightens a real config dir of ours, and links above it are fine', async () => {
    await mkdir(dir, { mode: 0o755 });
    await chmod(dir, 0o755);
    const viaLink = join(root, 'link-to-root');
    await symlink(root, viaLink);
    new ConfigStore(join(viaLink, 'nanopay')).updateProfile('default', (p) => p);
    expect(await mode(dir)).toBe(0o700);
    expect(await mode(file)).toBe(0o600);
  });
});
