import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// DESIGN.md's layering: the faces reach the service client only through ops/, and no module imports itself
// back through others (an import circle runs a module before what it needs is defined).
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src');

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? modules(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** The src/ modules a module imports (`import type` and `export type` run nothing, so they are left out when `values`). */
function importsOf(file: string, values: boolean): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(import|export)\s+(type\s)?[^;]*?from\s+'(\.[^']+)'/gm)]
    .filter((m) => !values || m[2] === undefined)
    .map((m) => resolve(dirname(file), (m[3] as string).replace(/\.js$/, '.ts')));
}

const ALL = modules(SRC);
const name = (file: string) => relative(SRC, file);

/** Each import circle (a strongly connected set of more than one module, or a module importing itself). */
function circles(): string[][] {
  const graph = new Map(ALL.map((f) => [f, importsOf(f, true).filter((d) => ALL.includes(d))]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const part: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) part.push(name(w));
    if (part.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(part.sort());
  };
  for (const f of ALL) if (!index.has(f)) visit(f);
  return found;
}

describe('layering', () => {
  it('the faces (commands, CLI glue, toolset and MCP, agent, SDK) import nothing of api/: they go through ops/', () => {
    const faces = ['cli', 'commands', 'toolset', 'agent', 'sdk', 'app', 'hooks'];
    const api = join(SRC, 'api');
    const past = ALL.filter((f) => faces.includes(name(f).split('/')[0] as string)).flatMap((f) => importsOf(f, false).filter((d) => d.startsWith(`${api}/`)).map((d) => `${name(f)} -> ${name(d)}`));
    expect(past).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles()).toEqual([]);
  });

  it('sees the imports it judges (a face importing ops/, a circle-free module importing others)', () => {
    expect(importsOf(join(SRC, 'commands/send.ts'), false).some((d) => d.startsWith(join(SRC, 'ops')))).toBe(true);
    expect(ALL.length).toBeGreaterThan(200);
  });
});
