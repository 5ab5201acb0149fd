// The steps scripts/build.mjs (the package) and scripts/test.mjs (npm test) share.
import { spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');

/** Removes what a build writes, so nothing of an earlier one survives. */
export function clean() {
  for (const path of ['dist', 'oclif.manifest.json']) rmSync(join(root, path), { recursive: true, force: true });
}

/**
 * Bundles the CLI into dist/app and then writes oclif's manifest (which reads dist/app only), in a child process.
 * @returns {Promise<string | undefined>} what to print when it failed
 */
export function bundleCli() {
  return new Promise((done, fail) => {
    spawn('sh', ['-c', 'node scripts/bundle-cli.mjs && node scripts/write-manifest.mjs'], { cwd: root, stdio: 'inherit' })
      .once('error', fail)
      .once('exit', (code, signal) => done(code === 0 ? undefined : `bundling the CLI or writing its manifest failed (${signal ?? `exit ${code}`})`));
  });
}

/**
 * Runs TypeScript's compiler (the native one, TypeScript 7) on a project, its output printed after it ends so that
 * it does not interleave with the suite's.
 * @param {string[]} args e.g. ['--noEmit', '-p', '.']
 * @param {{ priority?: number }} options priority: a lower one (a higher nice value) leaves the cores to the tests
 * @returns {Promise<string | undefined>} what to print when it failed
 */
export function tsc(args, { priority = 0 } = {}) {
  return new Promise((done, fail) => {
    const pretty = process.stderr.isTTY === true;
    const child = spawn(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--pretty', String(pretty), ...args], { cwd: root });
    // Set before the compiler's process starts (the wrapper spawns it), which inherits it.
    if (priority !== 0) setPriority(child.pid, priority);
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child
      .once('error', fail)
      .once('close', (code, signal) => {
        const text = Buffer.concat(output).toString().trimEnd();
        done(code === 0 ? undefined : `${text}\ntsc ${args.join(' ')} failed (${signal ?? `exit ${code}`})`);
      });
  });
}

/**
 * src/ to dist/ file by file, types stripped by esbuild: what runs from dist/ (the demo, the proof-of-work worker,
 * the unlocked session's process) in a fraction of a second, without the type check or declarations.
 */
export async function transpile() {
  const { build } = await import('esbuild');
  const entryPoints = readdirSync(join(root, 'src'), { recursive: true })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(root, 'src', file));
  await build({ entryPoints, outdir: join(root, 'dist'), outbase: join(root, 'src'), format: 'esm', platform: 'node', target: 'es2022', sourcemap: true, logLevel: 'warning' });
}
