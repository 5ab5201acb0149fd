import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN } from './cli.js';

/**
 * The docs' fenced code blocks, and what each says about itself in its info string (docs/development.md, "The docs"):
 * `test=NAME` (the test file NAME.test.ts runs or checks it, reading it with docBlocks), `no-run="why"`, or `output`.
 */
export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** README.md and every page of docs/, as paths from the repository's root. */
export const DOCS: string[] = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

export interface DocBlock {
  file: string;
  /** The line of its opening fence, from 1. */
  line: number;
  /** The info string's first word (sh, json, ts…), '' when none. */
  lang: string;
  info: string;
  /** The info string's words after the language: key=value, key="value with spaces", or a bare word (true). */
  attrs: Record<string, string | true>;
  code: string;
}

export function docText(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

function parseInfo(info: string): { lang: string; attrs: Record<string, string | true> } {
  const words = [...info.matchAll(/([^\s=]+)(?:=(?:"([^"]*)"|(\S+)))?/g)];
  const [first, ...rest] = words;
  const lang = first === undefined || first[0].includes('=') ? '' : first[1] as string;
  const attrs: Record<string, string | true> = {};
  for (const word of lang === '' ? words : rest) attrs[word[1] as string] = word[2] ?? word[3] ?? true;
  return { lang, attrs };
}

/** Every fenced block of a doc, in order. */
export function fencedBlocks(file: string): DocBlock[] {
  const lines = docText(file).split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(.*)$/.exec(lines[i] as string);
    if (open === null) continue;
    const fence = open[1] as string;
    const info = (open[2] as string).trim();
    const end = lines.findIndex((line, j) => j > i && line.startsWith(fence) && line.slice(fence.length).trim() === '');
    if (end === -1) throw new Error(`${file}:${i + 1}: a code block that is never closed`);
    blocks.push({ file, line: i + 1, info, ...parseInfo(info), code: lines.slice(i + 1, end).join('\n') + '\n' });
    i = end;
  }
  return blocks;
}

/** The blocks of `file` that the test `test` (test/…/test.test.ts) runs or checks: at least one, or it throws. */
export function docBlocks(file: string, test: string): DocBlock[] {
  const found = fencedBlocks(file).filter((block) => block.attrs.test === test);
  if (found.length === 0) throw new Error(`${file} has no code block marked test=${test}`);
  return found;
}

/** A PATH on which `nanopay` is the built CLI (a link in `dir`/bin) and `node` this test's Node.js, as a reader's shell has them. */
export async function pathWithNanopay(dir: string): Promise<string> {
  const bin = join(dir, 'bin');
  await mkdir(bin, { recursive: true });
  await symlink(BIN, join(bin, 'nanopay'));
  return `${bin}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
}
