// Builds the package: tsc's dist/ (the library with its declarations, the demo, the sandbox, what bench/ imports),
// the bundled CLI in dist/app and oclif's manifest, side by side.
import { bundleCli, clean, tsc } from './build-steps.mjs';

clean();
const failures = (await Promise.all([tsc(['-p', 'tsconfig.build.json']), bundleCli()])).filter((failure) => failure !== undefined);
for (const failure of failures) console.error(failure);
process.exitCode = failures.length > 0 ? 1 : 0;
