import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // End-to-end tests run the built CLI in child processes.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Most test time is spent in child processes and waits: three files at a time keep two cores busy
    // (measured here: 2 workers 245 s, 3 workers 197 s, 4 workers 195 s).
    maxWorkers: 3,
  },
});
