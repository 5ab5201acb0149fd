/**
 * The CLI's entry as bundled for bin/run.js: oclif and every command come from
 * one build, so they share one copy of @oclif/core and of our error classes.
 */
export { execute } from '@oclif/core';
