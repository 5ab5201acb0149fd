// The unused-exports check on its own (scripts/unused-exports.mjs says what it checks); npm test runs the same
// check inside scripts/typescript.mjs, on the program it type-checks with.
import { resolve } from 'node:path';
import ts from 'typescript';
import { unusedExports } from './unused-exports.mjs';

const root = resolve(import.meta.dirname, '..');
const config = ts.getParsedCommandLineOfConfigFile(resolve(root, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
const result = unusedExports(ts.createProgram(config.fileNames, config.options), root);
if (result.error !== undefined) {
  console.error(result.error);
  process.exit(1);
}
console.log(`check-exports: every export of ${result.modules} modules is used`);
