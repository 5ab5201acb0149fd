import { Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { readFlagFile } from '../../cli/input/flag-file.js';
import { countRead, stdinRest, type StdinText } from '../../cli/input/stdin.js';
import { NanoPayError } from '../../errors.js';
import { importWallet, type CreatedWallet } from '../../ops/profile/wallet.js';

export default class WalletImport extends SessionCommand {
  static override summary = 'Import a wallet from a seed, a mnemonic or a private key read from stdin (or typed at a hidden prompt).';
  protected static override allowsNewProfile = true;
  static override description = `Secrets are read from stdin or, on a terminal without a --*-stdin flag, typed at a hidden prompt (it asks what
you import, then the secret, and a mnemonic's passphrase); never from flags (they would stay in shell history).
A 64-hex seed uses the node's derivation, a 128-hex seed BIP39 (m/44'/165'/i'). A mnemonic is BIP39 (12 or 24 words,
optional passphrase); --legacy reads a 24-word mnemonic that encodes a 64-hex seed, as some mobile wallets show it.
The secret is everything on stdin (after the password line with --password-stdin): a mnemonic's words may be on one
line or many, separated by any whitespace; a hex seed or key split over lines is joined.`;
  static override examples = [
    '<%= config.bin %> wallet import --name savings',
    'printf "%s" "$SEED" | <%= config.bin %> wallet import --seed-stdin --name cold',
    'cat words.txt | <%= config.bin %> wallet import --mnemonic-stdin --passphrase-file pass.txt',
  ];
  static override flags = {
    name: Flags.string({ description: 'wallet name' }),
    'seed-stdin': Flags.boolean({ description: 'read a 64- or 128-hex seed from stdin', exclusive: ['mnemonic-stdin', 'private-key-stdin'] }),
    'mnemonic-stdin': Flags.boolean({ description: 'read a 12/24-word mnemonic from stdin', exclusive: ['seed-stdin', 'private-key-stdin'] }),
    'private-key-stdin': Flags.boolean({ description: 'read a 64-hex private key from stdin', exclusive: ['seed-stdin', 'mnemonic-stdin'] }),
    'passphrase-file': Flags.string({ description: 'BIP39 passphrase for the mnemonic, read from this file' }),
    legacy: Flags.boolean({ description: 'the mnemonic encodes a legacy 64-hex seed' }),
    account: Flags.integer({ description: 'account index within the wallet to start with', default: 0, min: 0, aliases: ['index'] }),
  };

  async run(): Promise<CreatedWallet> {
    const { flags } = await this.parse(WalletImport);
    const given = flags['seed-stdin'] ? 'seed' : flags['mnemonic-stdin'] ? 'mnemonic' : flags['private-key-stdin'] ? 'private-key' : undefined;
    const typed = given === undefined && !flags['password-stdin'] && process.stdin.isTTY === true && process.stderr.isTTY === true;
    if (given === undefined && !typed) {
      throw new NanoPayError('USAGE', 'Say what stdin holds: --seed-stdin, --mnemonic-stdin or --private-key-stdin', {
        hint: 'On a terminal, run wallet import without them to type the secret at a hidden prompt.',
      });
    }
    // An unreadable file is reported before a key store is made or a password asked for.
    let passphrase = flags['passphrase-file'] === undefined ? undefined : (await readFlagFile(flags['passphrase-file'], '--passphrase-file')).replace(/\r?\n$/, '');
    const session = this.session(flags);
    // With --password-stdin the password is stdin's first line, so the key store is unlocked (or made) before the
    // secret is read; otherwise the secret is checked first, and an invalid one leaves no key store behind.
    if (flags['password-stdin']) await session.keystore('create');
    const kind = given ?? (await askKind(flags.legacy));
    const what = kind === 'mnemonic' ? 'the mnemonic' : kind === 'seed' ? 'the seed' : 'the private key';
    const secret = secretOf(kind, flags.legacy, typed ? await askSecret(what) : await stdinRest(what));
    if (typed && kind === 'mnemonic' && !flags.legacy && passphrase === undefined) passphrase = (await askHidden('BIP39 passphrase (Enter for none):')) || undefined;
    const created = await importWallet(session, {
      kind,
      secret,
      index: flags.account,
      legacy: flags.legacy,
      ...(flags.name === undefined ? {} : { name: flags.name }),
      ...(passphrase === undefined ? {} : { passphrase }),
    });
    this.log(`Imported wallet "${created.name}" (${created.kind}).`);
    this.log(`Address: ${created.address}`);
    return created;
  }
}

/** The kind of secret, asked on the terminal (wallet import without a --*-stdin flag). */
async function askKind(legacy: boolean): Promise<'seed' | 'mnemonic' | 'private-key'> {
  if (legacy) return 'mnemonic';
  const { select } = await import('@inquirer/prompts');
  return select<'seed' | 'mnemonic' | 'private-key'>(
    {
      message: 'What do you import?',
      choices: [
        { name: 'A mnemonic (12 or 24 words)', value: 'mnemonic' },
        { name: 'A seed (64 or 128 hex characters)', value: 'seed' },
        { name: 'A private key (64 hex characters)', value: 'private-key' },
      ],
    },
    { output: process.stderr },
  );
}

/** A line typed at a prompt that shows a mask, never the text: the terminal's scrollback keeps no secret. */
async function askHidden(message: string): Promise<string> {
  const { password } = await import('@inquirer/prompts');
  return password({ message, mask: true }, { output: process.stderr });
}

async function askSecret(what: string): Promise<StdinText> {
  const line = (await askHidden(`Type or paste ${what} (hidden):`)).trim();
  if (line === '') throw new NanoPayError('USAGE', `Expected ${what}, but nothing was typed`);
  return { lines: [line], words: line.split(/\s+/) };
}

/**
 * The secret in what stdin held (or the prompt), refused when its size is not one a secret of
 * that kind has: a backup with a line missing or one too many must not become
 * another valid wallet. Errors give counts, never the secret.
 */
function secretOf(kind: 'seed' | 'mnemonic' | 'private-key', legacy: boolean, text: StdinText): string {
  if (kind === 'mnemonic') {
    const counts = legacy ? [24] : [12, 24];
    if (!counts.includes(text.words.length)) {
      throw new NanoPayError('INVALID_MNEMONIC', `Expected a mnemonic of ${counts.join(' or ')} words on stdin, but read ${countRead(text)}; nothing was imported`, {
        hint: 'Give every word of the backup, in order, separated by spaces or line breaks.',
      });
    }
    return text.words.join(' ');
  }
  const hex = text.words.join('');
  const lengths = kind === 'seed' ? [64, 128] : [64];
  if (!lengths.includes(hex.length)) {
    const what = kind === 'seed' ? 'a seed of 64 or 128 hex characters' : 'a private key of 64 hex characters';
    throw new NanoPayError(kind === 'seed' ? 'INVALID_SEED' : 'INVALID_PRIVATE_KEY', `Expected ${what} on stdin, but read ${hex.length} characters (${countRead(text)}); nothing was imported`);
  }
  if (text.lines.length > 1) {
    process.stderr.write(`Note: the ${kind === 'seed' ? 'seed' : 'private key'} was joined from ${text.lines.length} lines into ${hex.length} hex characters; check that the address is the one you expect.\n`);
  }
  return hex;
}
