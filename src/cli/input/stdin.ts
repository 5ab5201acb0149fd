import { NanoPayError } from '../../errors.js';

let lines: Promise<string[]> | undefined;
let next = 0;

async function readAll(): Promise<string[]> {
  if (process.stdin.isTTY) {
    throw new NanoPayError('USAGE', 'Expected input on stdin, but stdin is a terminal', { hint: 'Pipe the value in, e.g. printf "%s" "$VALUE" | nanopay …' });
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/);
}

/**
 * Stdin read once and handed out line by line: with --password-stdin the
 * first line is the password, and a secret is what follows (stdinRest).
 */
export async function stdinLine(what: string): Promise<string> {
  lines ??= readAll();
  const all = await lines;
  const line = all[next++];
  if (line === undefined || line.trim() === '') {
    throw new NanoPayError('USAGE', `Expected ${what} on stdin, but it was empty`);
  }
  return line;
}

/** What is left on stdin: its lines that hold something (without their surrounding whitespace), and all its words. */
export interface StdinText {
  lines: string[];
  words: string[];
}

/**
 * Everything on stdin after the lines already handed out, for a secret that
 * may span several lines (a mnemonic written over two, a seed wrapped at 32
 * characters). Blank lines and CR line ends do not count.
 */
export async function stdinRest(what: string): Promise<StdinText> {
  lines ??= readAll();
  const rest = (await lines).slice(next).map((line) => line.trim()).filter((line) => line !== '');
  next = Number.POSITIVE_INFINITY;
  if (rest.length === 0) throw new NanoPayError('USAGE', `Expected ${what} on stdin, but it was empty`);
  return { lines: rest, words: rest.flatMap((line) => line.split(/\s+/)) };
}

/** "13 words on 2 lines": what was read, for an error that must not show the secret itself. */
export function countRead(text: StdinText): string {
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `${plural(text.words.length, 'word')} on ${plural(text.lines.length, 'line')}`;
}
