/**
 * The CLI's entry as bundled for bin/run.js: oclif and every command come from
 * one build, so they share one copy of @oclif/core and of our error classes.
 */
import { settings } from '@oclif/core';

// Only compiled JavaScript ships. With NODE_ENV=development (or test) oclif would look for TypeScript sources of the
// commands, and in an installed copy, which has no TypeScript, warn on every command that it found none.
settings.enableAutoTranspile = false;

export { execute } from '@oclif/core';
