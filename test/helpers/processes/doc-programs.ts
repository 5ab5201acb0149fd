import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCommand, type RunResult } from './cli.js';
import { ROOT } from './docs.js';
import { tempDir } from './temp.js';

/**
 * The guides' TypeScript blocks as a reader runs them: each saved as NAME.mts in a project of its own, where
 * nanopay-cli (this clone, built) and the packages the guides install (@x402/fetch, express…) are in node_modules
 * (links into the clone's), checked by TypeScript in strict mode, and run with `node NAME.mts` (Node.js strips the
 * types). The check reads nanopay-cli's types from src/, whose declarations npm test does not build (it transpiles).
 */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2022'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    types: ['node'],
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    paths: { 'nanopay-cli': [join(ROOT, 'src/index.ts')] },
  },
  include: ['*.mts'],
};

/** A new project holding `programs` (name → source), with nanopay-cli and the clone's packages installed. */
export async function programProject(programs: Record<string, string>): Promise<string> {
  const dir = await tempDir('nanopay-doc-program-');
  const modules = join(dir, 'node_modules');
  await mkdir(modules);
  for (const entry of await readdir(join(ROOT, 'node_modules'))) {
    if (!entry.startsWith('.')) await symlink(join(ROOT, 'node_modules', entry), join(modules, entry));
  }
  await symlink(ROOT, join(modules, 'nanopay-cli'));
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  for (const [name, source] of Object.entries(programs)) await writeFile(join(dir, `${name}.mts`), source);
  return dir;
}

/** TypeScript's verdict on the project's programs (`tsc -p DIR`): exit 0 and no output when they are sound. */
export function typecheck(dir: string): Promise<RunResult> {
  return runCommand(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir, '--pretty', 'false'], { env: { PATH: process.env.PATH }, timeoutMs: 120_000 });
}
