// npm test: builds what the tests run (src/ transpiled to dist/, the bundled CLI and its manifest), then runs the
// vitest suite while TypeScript type-checks src/ and test/ beside it at a lower priority, and the unused-exports
// check runs in this process. Any of them failing fails npm test; the checks' results are printed after the
// suite's. Arguments go to vitest (npm test -- test/unit). The suite gets a TMPDIR of its own, which must be empty
// when it ends: a test that leaves a temporary file or directory behind fails npm test (and the dir goes anyway).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundleCli, clean, transpile, tsc } from './build-steps.mjs';
import { unusedExports } from './unused-exports.mjs';

clean();
const built = await Promise.all([bundleCli(), transpile().then(() => undefined, (error) => `transpiling src/ failed: ${error.message}`)]);
const buildFailures = built.filter((failure) => failure !== undefined);
if (buildFailures.length > 0) {
  for (const failure of buildFailures) console.error(failure);
  process.exit(1);
}

// Its own, not the machine's: other programs (and other test runs) use /tmp meanwhile.
const suiteTmp = mkdtempSync(join(tmpdir(), 'nanopay-npm-test-'));
// Traversable by other users (not listable), as /tmp is: the PostgreSQL tests' cluster runs as the postgres user in a dir of its own inside.
chmodSync(suiteTmp, 0o711);
// A test that forgets its own config dir would use (and change) the user's real one: it gets an empty one inside
// the suite's TMPDIR instead, which the leftover check below then reports.
const vitest = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: suiteTmp, XDG_CONFIG_HOME: join(suiteTmp, 'user-config-dir-used-by-a-test') },
});
const suite = new Promise((done) => {
  vitest.once('error', (error) => done(`vitest did not start: ${error.message}`));
  vitest.once('exit', (code, signal) => done(code === 0 ? undefined : `the test suite failed (${signal ?? `exit ${code}`})`));
});
const typeCheck = tsc(['--noEmit', '-p', '.'], { priority: 10 });
const exports = await unusedExports(resolve(import.meta.dirname, '..'));
const checks = [await typeCheck, exports.error];
const suiteResult = await suite;
const leftovers = readdirSync(suiteTmp);
rmSync(suiteTmp, { recursive: true, force: true });
const leaked = leftovers.length === 0 ? undefined : `the test suite left ${leftovers.length} temporary entries behind (use tempDir from test/helpers/processes/temp.ts): ${leftovers.sort().join(', ')}`;
const failures = [...checks, suiteResult, leaked].filter((failure) => failure !== undefined);
if (exports.error === undefined) console.log(`check-exports: every export of ${exports.modules} modules is used`);
// Said again after vitest's summary, where a skipped tier is easy to miss (test/helpers/ledger/real-node.ts).
if (!process.env.NANO_NODE_BIN) console.log('real-node tier: skipped, NANO_NODE_BIN is not set (docs/development.md says how to get the reference nano_node)');
for (const failure of failures) console.error(failure);
process.exitCode = failures.length > 0 ? 1 : 0;
