import { NanoPayError } from '../../errors.js';

/**
 * Asks yes/no on the terminal. Without a terminal it refuses rather than
 * guessing: scripts must say --yes.
 */
export async function confirmOnTerminal(message: string, yes: boolean): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new NanoPayError('USAGE', 'Confirmation needed, but there is no terminal to ask on', { hint: 'Pass --yes to confirm in scripts.' });
  }
  const { confirm } = await import('@inquirer/prompts');
  return confirm({ message, default: false }, { output: process.stderr });
}
