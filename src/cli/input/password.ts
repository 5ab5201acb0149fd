import { NanoPayError } from '../../errors.js';
import type { PasswordSource } from '../../ops/session.js';
import { KeyStore, MIN_PASSWORD_LENGTH } from '../../wallet/keystore.js';
import { guardMemory } from '../../wallet/undumpable.js';
import { readFlagFile } from './flag-file.js';
import { stdinLine } from './stdin.js';

export interface PasswordFlags {
  'password-file'?: string;
  'password-stdin'?: boolean;
}

const OPTIONS = '--password-file PATH, --password-stdin, or the variable NANOPAY_PASSWORD';
/** Tries a user at a terminal gets, for a wrong password and for two entries that differ. */
const TRIES = 3;

/**
 * Where the key store password comes from, in order: --password-file,
 * --password-stdin, NANOPAY_PASSWORD (or AI_WALLET_PASSWORD), then a prompt on
 * a terminal. Never a flag value: it would sit in the shell history and `ps`.
 */
export function passwordSource(flags: PasswordFlags, env: NodeJS.ProcessEnv = process.env): PasswordSource {
  let cached: string | undefined;
  return async (purpose) => {
    cached ??= await resolve(flags, env, purpose);
    return cached;
  };
}

/** How the password reaches the command, for the audit trail. */
export function passwordVia(flags: PasswordFlags, env: NodeJS.ProcessEnv = process.env): string {
  if (flags['password-file'] !== undefined) return 'the key store password from a file';
  if (flags['password-stdin']) return 'the key store password from stdin';
  if (env.NANOPAY_PASSWORD || env.AI_WALLET_PASSWORD) return 'the key store password from the environment';
  return 'the key store password typed at a prompt';
}

/** True when the password will be asked on the terminal (no file, stdin or variable gives it). */
function prompting(flags: PasswordFlags, env: NodeJS.ProcessEnv): boolean {
  return flags['password-file'] === undefined && !flags['password-stdin'] && !(env.NANOPAY_PASSWORD || env.AI_WALLET_PASSWORD);
}

/**
 * Opens the key store: once with a given password; on a terminal, a wrong
 * password is asked again, up to three tries.
 */
export function promptingUnlock(flags: PasswordFlags, source: PasswordSource, env: NodeJS.ProcessEnv = process.env): (path: string) => Promise<KeyStore> {
  return async (path) => {
    if (!prompting(flags, env)) return KeyStore.open(path, await source('unlock'));
    // Closed (and checked untraced) before a keystroke of the password is read.
    guardMemory();
    for (let attempt = 1; ; attempt++) {
      const password = await ask('Key store password:');
      try {
        return await KeyStore.open(path, password);
      } catch (error) {
        if (!(error instanceof NanoPayError) || error.code !== 'WRONG_PASSWORD' || attempt === TRIES) throw error;
        process.stderr.write(`Wrong password; ${TRIES - attempt} ${TRIES - attempt === 1 ? 'try' : 'tries'} left.\n`);
      }
    }
  };
}

async function ask(message: string, validate?: (v: string) => boolean | string): Promise<string> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new NanoPayError('PASSWORD_REQUIRED', 'The key store password is needed and there is no terminal to ask on', {
      hint: `Give it with ${OPTIONS}.`,
    });
  }
  const { password } = await import('@inquirer/prompts');
  return password({ message, mask: true, ...(validate === undefined ? {} : { validate }) }, { output: process.stderr });
}

async function resolve(flags: PasswordFlags, env: NodeJS.ProcessEnv, purpose: 'unlock' | 'create'): Promise<string> {
  guardMemory();
  if (flags['password-file'] !== undefined) {
    const text = await readFlagFile(flags['password-file'], '--password-file');
    const password = text.replace(/\r?\n$/, '');
    if (password === '') throw new NanoPayError('PASSWORD_REQUIRED', `The password file ${flags['password-file']} is empty`);
    return password;
  }
  if (flags['password-stdin']) return stdinLine('the password');
  const fromEnv = env.NANOPAY_PASSWORD || env.AI_WALLET_PASSWORD;
  if (fromEnv) return fromEnv;
  if (purpose === 'unlock') return ask('Key store password:');
  for (let attempt = 1; ; attempt++) {
    const first = await ask('New key store password:', (v) => v.length >= MIN_PASSWORD_LENGTH || `Use at least ${MIN_PASSWORD_LENGTH} characters`);
    const again = await ask('Repeat the password:');
    if (first === again) return first;
    if (attempt === TRIES) throw new NanoPayError('PASSWORD_REQUIRED', `The two passwords differed ${TRIES} times; nothing was changed`);
    process.stderr.write(`The two passwords differ; try again (${TRIES - attempt} ${TRIES - attempt === 1 ? 'try' : 'tries'} left).\n`);
  }
}
