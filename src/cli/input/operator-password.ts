import { NanoPayError } from '../../errors.js';
import { checkOperatorPassword } from '../../ops/access/operators.js';
import { stdinLine } from './stdin.js';

/**
 * A dashboard operator's new password: the first line of stdin (--stdin), or typed twice at a terminal, hidden.
 * Never a flag's value (shell history, ps).
 */
export async function operatorPassword(fromStdin: boolean, message: string): Promise<string> {
  if (fromStdin) return checkOperatorPassword((await stdinLine("the operator's password")).replace(/\r$/, ''));
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new NanoPayError('USAGE', "The operator's password is needed and there is no terminal to ask on", { hint: 'Pipe it in with --stdin.' });
  }
  const { password } = await import('@inquirer/prompts');
  const validate = (value: string): true | string => {
    try {
      checkOperatorPassword(value);
      return true;
    } catch (error) {
      return (error as Error).message;
    }
  };
  const first = await password({ message, mask: true, validate }, { output: process.stderr });
  const again = await password({ message: 'The same again:', mask: true }, { output: process.stderr });
  if (first !== again) throw new NanoPayError('USAGE', 'The two passwords differ; nothing was changed');
  return first;
}
