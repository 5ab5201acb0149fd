import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../../scripts/build-native.mjs', import.meta.url));

describe('install', () => {
  it('never fails when the native addon cannot be built, and says the WASM kernel will be used', () => {
    const result = spawnSync(process.execPath, [script], {
      env: { PATH: process.env.PATH, npm_config_node_gyp: '/nonexistent/node-gyp.js' },
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      encoding: 'utf8',
    });
    expect(result.status).toBe(0);
    expect(result.stderr).toMatch(/did not build .*WASM kernel will be used/);
  });
});
