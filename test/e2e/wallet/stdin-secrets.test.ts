import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session, secretIds } from '../../../src/ops/session.js';
import { newUser, PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { vectors } from '../../helpers/ledger/vectors.js';

// Secrets read from stdin through bin/run.js with real stdin (issue 24, point 13): a secret is everything after
// the password line, over any number of lines. Nothing here talks to the service, so no sandbox runs.
const UNUSED_SERVICE = 'http://127.0.0.1:9';

interface MnemonicVector {
  mnemonic: string;
  passphrase: string;
  accounts: { index: number; address: string }[];
}
// The 24-word vector with a passphrase: its first 12 words are a valid 12-word mnemonic of their own, the case that
// imported a different wallet with exit 0 when only the first line was read.
const vector = (vectors.mnemonic as MnemonicVector[]).find((v) => v.passphrase && v.mnemonic.split(' ').length === 24) as MnemonicVector;
const words = vector.mnemonic.split(' ');
const seedVector = (vectors.keys as { seed: string; index: number; address: string; private_key: string }[])[0] as { seed: string; index: number; address: string; private_key: string };

let user: CliUser;
let passphraseFile: string;

beforeAll(async () => {
  user = await newUser(UNUSED_SERVICE);
  passphraseFile = join(user.configDir, 'passphrase.txt');
  await writeFile(passphraseFile, `${vector.passphrase}\n`, { mode: 0o600 });
});

afterAll(async () => {
  if (user !== undefined) await rm(user.configDir, { recursive: true, force: true });
});

type Imported = { address: string; error?: { code: string; message: string } };
const importMnemonic = (name: string, input: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}) =>
  user.json<Imported>(['wallet', 'import', '--mnemonic-stdin', '--passphrase-file', passphraseFile, '--name', name, ...extra], { input, env });

describe('wallet import reads every word of the mnemonic on stdin', () => {
  it('24 words over two lines import the 24-word wallet, not the 12-word one of the first line', async () => {
    const imported = await importMnemonic('two-lines', `${words.slice(0, 12).join(' ')}\n${words.slice(12).join(' ')}\n`);
    expect(imported).toMatchObject({ _code: 0, address: vector.accounts[0]?.address });
  });

  it('one word per line, and CRLF line ends after a --password-stdin line', async () => {
    expect(await importMnemonic('per-line', `${words.join('\n')}\n`)).toMatchObject({ _code: 0, address: vector.accounts[0]?.address });
    const crlf = `${PASSWORD}\r\n${words.slice(0, 8).join(' ')}\r\n${words.slice(8, 20).join('  \t')}\r\n\r\n${words.slice(20).join(' ')}\r\n`;
    const imported = await importMnemonic('crlf', crlf, ['--password-stdin'], { NANOPAY_PASSWORD: '' });
    expect(imported).toMatchObject({ _code: 0, address: vector.accounts[0]?.address });
  });

  it('13 words are refused, naming the words and lines read; nothing is stored', async () => {
    const refused = await importMnemonic('thirteen', `${words.slice(0, 12).join(' ')}\n${words[12]}\n`);
    expect(refused).toMatchObject({ _code: 3, error: { code: 'INVALID_MNEMONIC' } });
    expect(refused.error?.message).toMatch(/13 words on 2 lines/);
    // The refusal names counts, never the words.
    expect(refused.error?.message).not.toContain(words[12]);
    const listed = await user.json<{ wallets: { name: string }[] }>(['wallet', 'list']);
    expect(JSON.stringify(listed)).not.toContain('thirteen');
  });
});

describe('a hex secret split over lines is joined', () => {
  it('--seed-stdin and --private-key-stdin over several lines (CRLF too) derive the one account', async () => {
    const seed = await user.json<Imported>(['wallet', 'import', '--seed-stdin', '--account', String(seedVector.index), '--name', 'seed-lines'], {
      input: `${seedVector.seed.slice(0, 32)}\n${seedVector.seed.slice(32)}\n`,
    });
    expect(seed).toMatchObject({ _code: 0, address: seedVector.address });
    const key = seedVector.private_key;
    const pk = await user.json<Imported>(['wallet', 'import', '--private-key-stdin', '--name', 'key-lines'], {
      input: `${key.slice(0, 16)} ${key.slice(16, 32)}\r\n${key.slice(32)}\r\n`,
    });
    expect(pk).toMatchObject({ _code: 0, address: seedVector.address });
  });
});

describe('config set --stdin reads the rest of stdin', () => {
  const stored = async (name: 'apiKey' | 'nodeAuth'): Promise<string | undefined> =>
    (await new Session({ password: async () => PASSWORD, env: user.env }).keystore()).get(secretIds[name]('default'));

  it('an api-key is one token: surrounding whitespace and CRLF go, inner whitespace or a second line is refused', async () => {
    expect(await user.json(['config', 'set', 'api-key', '--stdin'], { input: '\r\n  key-one\r\n\r\n' })).toMatchObject({ _code: 0 });
    expect(await stored('apiKey')).toBe('key-one');
    for (const input of ['alpha-2\nbeta-2\n', 'alpha-2 beta-2\n']) {
      const refused = await user.json<{ error: { code: string; message: string } }>(['config', 'set', 'api-key', '--stdin'], { input });
      expect(refused).toMatchObject({ _code: 3, error: { code: 'INVALID_REQUEST' } });
      expect(refused.error.message).toMatch(/2 words on [12] lines?/);
      expect(refused.error.message).not.toMatch(/alpha|beta/);
    }
    expect(await stored('apiKey')).toBe('key-one');
  });

  it('node-auth is one line (a basic user:password may hold spaces); a second line is refused', async () => {
    expect(await user.json(['config', 'set', 'node-auth', '--stdin'], { input: 'user:pass word\r\n' })).toMatchObject({ _code: 0 });
    expect(await stored('nodeAuth')).toBe('user:pass word');
    const refused = await user.json<{ error: { code: string; message: string } }>(['config', 'set', 'node-auth', '--stdin'], { input: 'user:one\nuser:two\n' });
    expect(refused).toMatchObject({ _code: 3, error: { code: 'INVALID_REQUEST' } });
    expect(refused.error.message).toMatch(/2 lines/);
    expect(await stored('nodeAuth')).toBe('user:pass word');
  });
});
