import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN } from '../../helpers/processes/cli.js';

const NODE_20 = fileURLToPath(new URL('../../fixtures/node-20.mjs', import.meta.url));

function onNode20(args: string[]) {
  return spawnSync(process.execPath, ['--import', NODE_20, BIN, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH } });
}

describe('a Node.js older than engines', () => {
  it('is refused plainly (UNSUPPORTED_NODE, exit 13) before anything is loaded, in JSON with --json', () => {
    const human = onNode20(['balance']);
    expect(human.status).toBe(13);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(/^Error \[UNSUPPORTED_NODE\] nanopay needs Node\.js 22 or newer; this is v20\.19\.0\nHint: /);
    const json = onNode20(['--version', '--json']);
    expect(json.status).toBe(13);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'UNSUPPORTED_NODE' } });
  });
});
