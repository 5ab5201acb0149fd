// Builds the package: tsc's dist/ (the library, the demo, the sandbox, what bench/ imports), the bundled CLI in
// dist/app and oclif's manifest. While this process type-checks and emits src/ (scripts/typescript.mjs), a child
// process on the other core bundles the CLI and writes the manifest.
import { bundleCli, clean } from './build-steps.mjs';
import { typescript } from './typescript.mjs';

clean();
const cli = bundleCli();
const failures = typescript({ check: false, emit: true });
const cliFailure = await cli;
if (cliFailure !== undefined) failures.push(cliFailure);
for (const failure of failures) console.error(failure);
process.exitCode = failures.length > 0 ? 1 : 0;
