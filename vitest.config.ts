import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const ALL = 'test/**/*.test.ts';
/**
 * Files that replace modules or globals (vi.mock, vi.stubGlobal, vi.stubEnv) get fresh modules of their own. The
 * others share their worker's modules from file to file: loading src/ and its dependencies again for each of
 * fifty files was a fifth of the suite's CPU (measured here). Each file still makes its own sandbox, users and
 * servers, so no test sees another's state.
 */
const TEST_DIR = fileURLToPath(new URL('test/', import.meta.url));
const OWN_MODULES = readdirSync(TEST_DIR, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts') && /\bvi\.(mock|doMock|stubGlobal|stubEnv)\(/.test(readFileSync(`${TEST_DIR}${file}`, 'utf8')))
  .map((file) => `test/${file}`);

export default defineConfig({
  test: {
    // End-to-end tests run the built CLI in child processes.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Threads, not a process per file: the same suite took 25 s less CPU (measured here).
    pool: 'threads',
    // Much of a file's time is waiting (child processes, servers, timeouts), so more files run than there are
    // cores. npm test on a quiet machine here: 3 workers 63.6-64.9 s (3 runs), 4 workers 68 s, 2 workers 69 s.
    maxWorkers: 3,
    // Removes the temporary directories each file made (test/helpers/processes/temp.ts).
    setupFiles: ['test/setup/temp-dirs.ts'],
    projects: [
      { extends: true, test: { name: 'own-modules', include: OWN_MODULES } },
      { extends: true, test: { name: 'shared-modules', include: [ALL], exclude: OWN_MODULES, isolate: false } },
    ],
  },
});
