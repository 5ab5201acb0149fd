import { NanoPayError } from '../../errors.js';
import { checkOperatorPassword, MIN_OPERATOR_PASSWORD } from '../../ops/access/operators.js';
import { stdinLine } from './stdin.js';

const TRIES = 3;

/**
 * A dashboard operator's new password: the first line of stdin with --password-stdin (scripts), else typed
 * twice at a hidden prompt. Never a flag value: it would sit in the shell history and `ps`.
 */
export async function operatorPassword(name: string, fromStdin: boolean): Promise<string> {
  if (fromStdin) return checkOperatorPassword(await stdinLine(`the password of operator ${name}`));
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new NanoPayError('PASSWORD_REQUIRED', `The password of operator ${name} is needed and there is no terminal to ask on`, {
      hint: 'Give it on the first line of stdin with --password-stdin.',
    });
  }
  const { password } = await import('@inquirer/prompts');
  const ask = (message: string, validate?: (v: string) => boolean | string): Promise<string> =>
    password({ message, mask: true, ...(validate === undefined ? {} : { validate }) }, { output: process.stderr });
  for (let attempt = 1; ; attempt++) {
    const first = await ask(`Password for operator ${name}:`, (v) => v.length >= MIN_OPERATOR_PASSWORD || `Use at least ${MIN_OPERATOR_PASSWORD} characters`);
    const again = await ask('Repeat the password:');
    if (first === again) return checkOperatorPassword(first);
    if (attempt === TRIES) throw new NanoPayError('PASSWORD_REQUIRED', `The two passwords differed ${TRIES} times; nothing was changed`);
    process.stderr.write(`The two passwords differ; try again (${TRIES - attempt} ${TRIES - attempt === 1 ? 'try' : 'tries'} left).\n`);
  }
}
