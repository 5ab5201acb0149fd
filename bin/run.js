#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { arch, platform, release } from 'node:os';

const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** How is-wsl (oclif's check) recognises WSL, besides the kernel release. */
function procVersion() {
  try {
    return readFileSync('/proc/version', 'utf8');
  } catch {
    return '';
  }
}

/**
 * `--version` alone is answered here, with the very line oclif prints
 * (`name/version platform-arch node-version`), without loading oclif: scripts
 * call it often. On WSL oclif says `wsl`: there oclif answers.
 */
function fastVersion(argv) {
  if (argv.length !== 1 || argv[0] !== '--version') return undefined;
  if (platform() === 'linux' && (/microsoft/i.test(release()) || /microsoft/i.test(procVersion()))) return undefined;
  return `${pjson.name}/${pjson.version} ${platform()}-${arch() === 'ia32' ? 'x86' : arch()} node-${process.version}`;
}

/**
 * Node.js older than package.json's engines: said plainly (exit 13, the machine), before any module that needs a
 * newer one is loaded (the store's SQLite library crashes on Node.js 20).
 */
function unsupportedNode(argv) {
  const minimum = Number(/\d+/.exec(pjson.engines.node)[0]);
  if (Number(process.versions.node.split('.')[0]) >= minimum) return false;
  const message = `nanopay needs Node.js ${minimum} or newer; this is ${process.version}`;
  const hint = 'Install a maintained Node.js LTS (22 or 24) and run nanopay with it.';
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify({ error: { code: 'UNSUPPORTED_NODE', message, hint } })}\n`);
  else process.stderr.write(`Error [UNSUPPORTED_NODE] ${message}\nHint: ${hint}\n`);
  process.exitCode = 13;
  return true;
}

const argv = process.argv.slice(2);
if (!unsupportedNode(argv)) {
  const version = fastVersion(argv);
  if (version === undefined) {
    // Before the bundle loads, so that its code comes from the cache (src/cli/compile-cache.ts says where and when).
    const { enableCompileCache } = await import('../dist/app/compile-cache.js');
    enableCompileCache();
    const { run } = await import('../dist/app/main.js');
    await run(argv, import.meta.url);
  } else {
    process.stdout.write(`${version}\n`);
  }
}
