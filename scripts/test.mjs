// npm test: builds what the tests run (src/ transpiled to dist/, the bundled CLI and its manifest), then runs the
// vitest suite while this process type-checks src/ and test/ and runs the unused-exports check beside it, at a
// lower priority: the suite keeps the cores it needs and the check takes the rest. Either failing fails npm test;
// the check's result is printed after the suite's. Arguments go to vitest (npm test -- test/unit).
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { bundleCli, clean, transpile } from './build-steps.mjs';
import { typescript } from './typescript.mjs';

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
// Only this thread: vitest, started above, keeps its priority.
setPriority(10);
const logged = [];
const failures = typescript({ check: true, emit: false, log: (line) => logged.push(line) });
const suiteFailure = await suite;
for (const line of logged) console.log(line);
for (const failure of failures) console.error(failure);
if (suiteFailure !== undefined) console.error(suiteFailure);
process.exitCode = failures.length > 0 || suiteFailure !== undefined ? 1 : 0;
