// npm test: builds what the tests run (src/ transpiled to dist/, the bundled CLI and its manifest), then runs the
// vitest suite while TypeScript type-checks src/ and test/ beside it at a lower priority, and the unused-exports
// check runs in this process. Any of them failing fails npm test; the checks' results are printed after the
// suite's. Arguments go to vitest (npm test -- test/unit).
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { bundleCli, clean, transpile, tsc } from './build-steps.mjs';
import { unusedExports } from './unused-exports.mjs';

clean();
const built = await Promise.all([bundleCli(), transpile().then(() => undefined, (error) => `transpiling src/ failed: ${error.message}`)]);
const buildFailures = built.filter((failure) => failure !== undefined);
if (buildFailures.length > 0) {
  for (const failure of buildFailures) console.error(failure);
  process.exit(1);
}

const vitest = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
const suite = new Promise((done) => {
  vitest.once('error', (error) => done(`vitest did not start: ${error.message}`));
  vitest.once('exit', (code, signal) => done(code === 0 ? undefined : `the test suite failed (${signal ?? `exit ${code}`})`));
});
const typeCheck = tsc(['--noEmit', '-p', '.'], { priority: 10 });
const exports = await unusedExports(resolve(import.meta.dirname, '..'));
const checks = [await typeCheck, exports.error];
const failures = [...checks, await suite].filter((failure) => failure !== undefined);
if (exports.error === undefined) console.log(`check-exports: every export of ${exports.modules} modules is used`);
for (const failure of failures) console.error(failure);
process.exitCode = failures.length > 0 ? 1 : 0;
