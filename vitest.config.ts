import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup/sessions.ts'],
    // End-to-end tests run the built CLI; each call unlocks the key store (scrypt, N = 2^17).
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Most test time is spent waiting on child processes: two files at a time keep both cores busy.
    maxWorkers: 2,
  },
});
