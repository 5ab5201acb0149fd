import { randomBytes } from 'node:crypto';
import { chmod, chown, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { PASSWORD, newUser, runCli, type CliUser } from '../../helpers/processes/cli.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { tempDir } from '../../helpers/processes/temp.js';

// Private directories are checked for owner before use, and files that hold secrets (passwords, tokens) must be
// the user's own and closed to group and others, like ssh's private keys: UNSAFE_PATH (exit 1), with a hint.

const root = process.geteuid?.() === 0;
const posix = process.platform !== 'win32';
/** Some uid that is not this process's. */
const STRANGER = 4242;
const NO_PASSWORD = { NANOPAY_PASSWORD: '' };

let sb: RunningSandbox;
let user: CliUser;

beforeAll(async () => {
  sb = await sandbox();
  user = await newUser(sb.url);
});

afterAll(async () => {
  await sb?.close();
});

type Failure = { _code: number | null; error: { code: string; message: string; hint?: string } };

/** A file in the user's dir with `text` and `mode` (chmod: the umask does not narrow it). */
async function fileWith(name: string, text: string, mode: number): Promise<string> {
  const path = join(user.configDir, `${name}-${randomBytes(3).toString('hex')}`);
  await writeFile(path, text);
  await chmod(path, mode);
  return path;
}

describe.skipIf(!root)('a config dir of another user', () => {
  it('is refused with UNSAFE_PATH (exit 1, a hint), not used and not changed', async () => {
    const theirs = await newUser(sb.url);
    await chmod(theirs.configDir, 0o755);
    await chown(theirs.configDir, STRANGER, STRANGER);
    try {
      const listed = await theirs.json<Failure>(['wallet', 'list']);
      expect(listed).toMatchObject({ _code: 1, error: { code: 'UNSAFE_PATH', message: expect.stringContaining(`belongs to another user (uid ${STRANGER}`) } });
      expect(listed.error.hint).toMatch(/NANOPAY_CONFIG_DIR/);
      const after = await stat(theirs.configDir);
      expect([after.uid, after.mode & 0o777]).toEqual([STRANGER, 0o755]);
    } finally {
      await rm(theirs.configDir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!posix)('files that hold secrets', () => {
  it('a --password-file others can read is refused like ssh refuses a loose key; 0600 works', async () => {
    const loose = await fileWith('password', `${PASSWORD}\n`, 0o644);
    const refused = await user.json<Failure>(['wallet', 'create', '--name', 'w', '--password-file', loose], { env: NO_PASSWORD });
    expect(refused).toMatchObject({ _code: 1, error: { code: 'UNSAFE_PATH', message: expect.stringContaining('mode 0644'), hint: `chmod 600 ${loose}` } });
    await chmod(loose, 0o600);
    expect((await user.json(['wallet', 'create', '--name', 'w', '--password-file', loose], { env: NO_PASSWORD }))._code).toBe(0);
  });

  it.skipIf(!root)('a --password-file of another user is refused, whatever its mode', async () => {
    const theirs = await fileWith('password', `${PASSWORD}\n`, 0o600);
    await chown(theirs, STRANGER, STRANGER);
    const refused = await user.json<Failure>(['wallet', 'create', '--name', 'theirs', '--password-file', theirs], { env: NO_PASSWORD });
    expect(refused).toMatchObject({ _code: 1, error: { code: 'UNSAFE_PATH', message: expect.stringContaining(`belongs to another user (uid ${STRANGER})`) } });
  });

  it('a --token-file others can read stops serve before it unlocks or listens', async () => {
    const loose = await fileWith('token', 'a-token-that-others-can-read\n', 0o640);
    const refused = await user.json<Failure>(['serve', '--port', '0', '--token-file', loose]);
    expect(refused).toMatchObject({ _code: 1, error: { code: 'UNSAFE_PATH', hint: `chmod 600 ${loose}` } });
  });

  it('a --passphrase-file others can read is refused before a key store is made', async () => {
    const first = await newUser(sb.url, {}, { keystore: 'none' });
    const loose = join(first.configDir, 'passphrase.txt');
    await writeFile(loose, 'a passphrase\n');
    await chmod(loose, 0o604);
    const mnemonic = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
    const refused = await first.json<Failure>(['wallet', 'import', '--mnemonic-stdin', '--passphrase-file', loose], { input: `${mnemonic}\n` });
    expect(refused).toMatchObject({ _code: 1, error: { code: 'UNSAFE_PATH' } });
    await expect(stat(keystorePath(first.configDir))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('the strict agent refuses to start with an agent-password file others can read, and leaves it as it is', async () => {
    const dir = await tempDir('nanopay-agent-');
    const password = randomBytes(32).toString('base64url');
    const file = join(dir, 'agent-password');
    await writeFile(file, `${password}\n`);
    await chmod(file, 0o644);
    await KeyStore.create(keystorePath(dir), password, 2 ** 10);
    const env = { PATH: process.env.PATH, HOME: dir, NANOPAY_API_URL: sb.url, NO_COLOR: '1' };
    try {
      const result = await runCli(['agent', '--strict', '--dir', dir, '--port', '0', '--json'], env, { timeoutMs: 20_000 });
      expect(result.code).toBe(1);
      expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'UNSAFE_PATH', hint: `chmod 600 ${file}` } });
      expect((await stat(file)).mode & 0o777).toBe(0o644);
      expect((await readFile(file, 'utf8')).trim()).toBe(password);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
