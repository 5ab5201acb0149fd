import { NanoPayError } from '../errors.js';

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
 * Stdin read once and handed out line by line: with --password-stdin and
 * --seed-stdin together, the first line is the password and the next the secret.
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
