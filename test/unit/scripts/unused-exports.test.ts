import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDirSync } from '../../helpers/processes/temp.js';

// The check npm test runs on src/ (scripts/unused-exports.mjs), run here on small trees written for each case.
const { unusedExports } = (await import(new URL('../../../scripts/unused-exports.mjs', import.meta.url).href)) as {
  unusedExports: (root: string) => Promise<{ modules: number; error?: string }>;
};

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** Writes the files (paths relative to the root) and runs the check; its error, or 'clean'. */
async function check(files: Record<string, string>): Promise<string> {
  const root = tempDirSync('nanopay-exports-');
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const result = await unusedExports(root);
  return result.error ?? 'clean';
}

const lib = 'export function a() { return 1; }\nexport const b = 2;\nexport class C {}\nexport interface T { x: number }\nexport type U = string;\n';

describe('unused-exports check', () => {
  it('names each exported value no other module imports, and leaves types and entry points alone', async () => {
    const error = await check({ 'src/lib.ts': lib, 'src/index.ts': "import { a } from './lib.js';\nexport const sdk = a();\n" });
    expect(error).toMatch(/^Exported but used by no other module/);
    expect(error).toContain('src/lib.ts: b');
    expect(error).toContain('src/lib.ts: C');
    expect(error).not.toMatch(/: a$|: T$|: U$|: sdk$/m);
  });

  it('counts named, renamed, default and namespace imports, re-exports, and import() bindings', async () => {
    expect(
      await check({
        'src/lib.ts': lib,
        'src/other.ts': 'export default function f() { return 3; }\nexport const g = 4;\nexport const h = 5;\n',
        'src/more.ts': 'export const m = 6;\nexport const n = 7;\n',
        'src/again.ts': "export { n } from './more.js';\nexport * from './other.js';\n",
        'src/index.ts': [
          "import { a as first, b } from './lib.js';",
          "import * as lib from './lib.js';",
          "import f from './other.js';",
          "export { m } from './more.js';",
          "export { n } from './again.js';",
          'export async function run() {',
          "  const { g } = await import('./other.js');",
          "  const again = await import('./again.js');",
          '  return [first(), b, new lib.C(), f(), g, again.h];',
          '}',
        ].join('\n'),
      }),
    ).toBe('clean');
  });

  it('does not count an import that only a type uses', async () => {
    const error = await check({
      'src/lib.ts': lib,
      'src/index.ts': "import { a, C } from './lib.js';\nexport const sdk = a();\nexport let kept: C | undefined;\nexport { b } from './lib.js';\n",
    });
    expect(error).toContain('src/lib.ts: C');
    expect(error).not.toContain('src/lib.ts: b');
  });

  it('counts every export of a namespace that is passed around whole', async () => {
    expect(await check({ 'src/lib.ts': lib, 'src/index.ts': "import * as lib from './lib.js';\nexport const all = lib;\n" })).toBe('clean');
  });

  it('fails on an import() whose names it cannot tell, and on an import from outside src/', async () => {
    const error = await check({
      'src/lib.ts': lib,
      'src/index.ts': "export const load = () => import('./lib.js').then((m) => m.a);\nimport '../test/helper.js';\n",
    });
    expect(error).toMatch(/^The unused-exports check cannot pass/);
    expect(error).toContain("src/index.ts: cannot tell which names its import('./lib.js') uses");
    expect(error).toContain('src/index.ts imports ../test/helper.js, outside src/');
  });

  it('counts what the benchmarks import from the build, and fails on a name src/ does not export', async () => {
    const files = { 'src/lib.ts': lib, 'src/index.ts': "import { a } from './lib.js';\nexport const sdk = a();\n" };
    expect(await check({ ...files, 'bench/x.mjs': "import { b, C } from '../dist/lib.js';\n" })).toBe('clean');
    expect(await check({ ...files, 'bench/x.mjs': "import { b, C, gone } from '../dist/lib.js';\n" })).toContain('bench/x.mjs: src/lib.ts does not export gone');
  });
});
