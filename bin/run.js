#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { arch, platform, release } from 'node:os';

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
  const pjson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return `${pjson.name}/${pjson.version} ${platform()}-${arch() === 'ia32' ? 'x86' : arch()} node-${process.version}`;
}

const version = fastVersion(process.argv.slice(2));
if (version === undefined) {
  const { run } = await import('../dist/app/main.js');
  await run(process.argv.slice(2), import.meta.url);
} else {
  process.stdout.write(`${version}\n`);
}
