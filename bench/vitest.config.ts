import { defineConfig } from 'vitest/config';

/**
 * The benches that need what the tests have (the reference nano_node started per run, test/helpers): vitest
 * runs them one at a time, without time limits, and they print their figures (npm run bench:shop-scale).
 * `npm test` never runs them.
 */
export default defineConfig({
  test: {
    include: ['bench/*.bench.ts'],
    testTimeout: 0,
    hookTimeout: 0,
    fileParallelism: false,
    setupFiles: ['test/setup/temp-dirs.ts'],
  },
});
