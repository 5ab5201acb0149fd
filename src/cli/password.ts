import { readFile } from 'node:fs/promises';
import { NanoPayError } from '../errors.js';
import type { PasswordSource } from '../ops/session.js';
import { stdinLine } from './stdin.js';

export interface PasswordFlags {
  'password-file'?: string;
  'password-stdin'?: boolean;
}

const OPTIONS = '--password-file PATH, --password-stdin, or the variable NANOPAY_PASSWORD';

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

async function resolve(flags: PasswordFlags, env: NodeJS.ProcessEnv, purpose: 'unlock' | 'create'): Promise<string> {
  if (flags['password-file'] !== undefined) {
    const text = await readFile(flags['password-file'], 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new NanoPayError('USAGE', `Cannot read the password file ${flags['password-file']}: ${error.code ?? error.message}`);
    });
    const password = text.replace(/\r?\n$/, '');
    if (password === '') throw new NanoPayError('PASSWORD_REQUIRED', `The password file ${flags['password-file']} is empty`);
    return password;
  }
  if (flags['password-stdin']) return stdinLine('the password');
  const fromEnv = env.NANOPAY_PASSWORD || env.AI_WALLET_PASSWORD;
  if (fromEnv) return fromEnv;
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new NanoPayError('PASSWORD_REQUIRED', 'The key store password is needed and there is no terminal to ask on', {
      hint: `Give it with ${OPTIONS}.`,
    });
  }
  const { password } = await import('@inquirer/prompts');
  const output = { output: process.stderr };
  if (purpose === 'unlock') return password({ message: 'Key store password:', mask: true }, output);
  const first = await password({ message: 'New key store password:', mask: true, validate: (v) => v.length >= 8 || 'Use at least 8 characters' }, output);
  const again = await password({ message: 'Repeat the password:', mask: true }, output);
  if (first !== again) throw new NanoPayError('PASSWORD_REQUIRED', 'The two passwords differ; nothing was changed');
  return first;
}
