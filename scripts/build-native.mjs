// Builds the native proof-of-work addon for this machine's vector width.
// Installing must never fail because of it: without the addon nanopay uses its WASM kernel.
import { spawnSync } from 'node:child_process';

if (process.env.NANOPAY_SKIP_NATIVE) {
  console.warn('nanopay: NANOPAY_SKIP_NATIVE is set; the native proof-of-work addon was not built.');
  process.exit(0);
}
// npm names its bundled node-gyp in npm_config_node_gyp for install scripts; otherwise try PATH.
const gyp = process.env.npm_config_node_gyp;
const result = gyp
  ? spawnSync(process.execPath, [gyp, 'rebuild'], { stdio: ['ignore', 'ignore', 'pipe'] })
  : spawnSync('node-gyp', ['rebuild'], { stdio: ['ignore', 'ignore', 'pipe'], shell: process.platform === 'win32' });
if (result.status === 0) {
  console.warn('nanopay: built the native proof-of-work addon.');
} else {
  const why = result.error?.message ?? result.stderr?.toString().split('\n').filter(Boolean).slice(-3).join(' | ');
  console.warn(`nanopay: the native proof-of-work addon did not build (${why}); the WASM kernel will be used.`);
}
