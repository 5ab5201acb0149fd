import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../helpers/processes/cli.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * docs/reference.md is generated from the command definitions (scripts/write-reference.mjs, `npm run docs`): a new
 * flag, a changed default or example, an exit code, without the file written again fails here. It must be the same
 * on any machine: written here, on a machine with another number of cores and another home, it is the same file.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const committed = readFileSync(join(root, 'docs', 'reference.md'), 'utf8');

async function generated(env: NodeJS.ProcessEnv, preload?: string): Promise<string> {
  const args = [...(preload === undefined ? [] : ['--import', preload]), join(root, 'scripts', 'write-reference.mjs'), '--stdout'];
  const result = await runCommand(process.execPath, args, { cwd: root, env: { PATH: process.env.PATH, ...env } });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

describe('docs/reference.md', () => {
  it('is what npm run docs writes from the command definitions (run it after changing a command)', async () => {
    expect(await generated({ HOME: process.env.HOME })).toBe(committed);
  });

  it('is the same on another machine: 3 cores, another home and config dir', async () => {
    const dir = await tempDir('nanopay-reference-');
    const preload = join(dir, 'other-machine.mjs');
    await writeFile(
      preload,
      [
        "import os from 'node:os';",
        "import { syncBuiltinESMExports } from 'node:module';",
        'os.availableParallelism = () => 3;',
        'const cpus = os.cpus();',
        'os.cpus = () => cpus.concat(cpus, cpus).slice(0, 3);',
        'syncBuiltinESMExports();',
      ].join('\n'),
    );
    const other = await generated({ HOME: join(dir, 'home'), NANOPAY_CONFIG_DIR: join(dir, 'config') }, preload);
    expect(other).toBe(committed);
  });

  it('lists every command, flag and exit code', () => {
    for (const heading of ['## nanopay send', '## nanopay checkout serve', '## nanopay wallet import', '## Environment', '## Exit codes']) expect(committed).toContain(`\n${heading}\n`);
    expect(committed).toContain("| `--log-format text\\|json` |");
    expect(committed).toMatch(/^\| 14 \| .*`APPROVAL_REQUIRED`/m);
  });
});
