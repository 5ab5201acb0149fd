import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { runCommand } from '../../helpers/processes/cli.js';
import { DOCS, docBlocks, fencedBlocks, pathWithNanopay, type DocBlock } from '../../helpers/processes/docs.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { keystorePath } from '../../../src/wallet/paths.js';

/**
 * The short examples of the guides (blocks marked test=docs-examples), run as a reader runs them after starting the
 * sandbox: each block in bash (stopping at the first failing command), in a directory of its own, with a fresh config
 * dir (its key store made at scrypt's lowest cost), `nanopay` on PATH and the guides' `export NANOPAY_API_URL=http://127.0.0.1:7076 NANOPAY_PASSWORD=…`. The
 * sandbox here listens on a free port, so its address stands where the guides write 127.0.0.1:7076.
 */
const DEFAULT_SANDBOX = '127.0.0.1:7076';
const PASSWORD = 'choose one';
const examples: DocBlock[] = DOCS.flatMap((file) => (fencedBlocks(file).some((b) => b.attrs.test === 'docs-examples') ? docBlocks(file, 'docs-examples') : []));

let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

async function runBlock(block: DocBlock): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dir = await tempDir('nanopay-doc-example-');
  // The fish user's completions directory, which fish makes (the completion example writes into it).
  await mkdir(join(dir, 'home', '.config', 'fish', 'completions'), { recursive: true });
  const address = new URL(sb.url).host;
  await writeFile(join(dir, 'example.sh'), `set -eo pipefail\n${block.code.replaceAll(DEFAULT_SANDBOX, address)}`);
  // The key store the guides' password opens, empty, at scrypt's lowest accepted cost: each command that unlocks it
  // (a wallet made, a rule of the policy set) then costs a millisecond, not half a second.
  await KeyStore.create(keystorePath(join(dir, 'config')), PASSWORD, 2 ** 10);
  const env = {
    PATH: await pathWithNanopay(dir),
    HOME: join(dir, 'home'),
    NANOPAY_CONFIG_DIR: join(dir, 'config'),
    NANOPAY_API_URL: sb.url,
    NANOPAY_PASSWORD: PASSWORD,
    NO_COLOR: '1',
  };
  return runCommand('bash', [join(dir, 'example.sh')], { cwd: dir, env, timeoutMs: 120_000 });
}

describe('the examples of the guides', () => {
  it('there is one at the top of each guide', () => {
    const guides = DOCS.filter((file) => file.startsWith('docs/') && !['docs/reference.md', 'docs/development.md'].includes(file));
    expect(guides.filter((file) => !examples.some((b) => b.file === file))).toEqual([]);
  });

  it.each(examples.map((b) => [`${b.file}:${b.line}`, b] as const))('%s runs against the sandbox', async (_where, block) => {
    const result = await runBlock(block);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    // A refusal the example shows on purpose (`… || echo "refused with exit $?"`) happened, with its exit code.
    if (block.code.includes('refused with exit')) expect(result.stdout).toMatch(/^refused with exit [1-9]/m);
  }, 150_000);
});
