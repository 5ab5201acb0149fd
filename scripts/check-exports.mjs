// The unused-exports check on its own (scripts/unused-exports.mjs says what it checks); npm test runs it too.
import { resolve } from 'node:path';
import { unusedExports } from './unused-exports.mjs';

const result = await unusedExports(resolve(import.meta.dirname, '..'));
if (result.error !== undefined) {
  console.error(result.error);
  process.exit(1);
}
console.log(`check-exports: every export of ${result.modules} modules is used`);
