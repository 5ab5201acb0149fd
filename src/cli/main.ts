/**
 * The CLI's entry as bundled for bin/run.js: oclif and every command come from
 * one build, so they share one copy of @oclif/core and of our error classes.
 */
import { execute, settings } from '@oclif/core';
import { globalFlagsAfterCommand } from './global-flags.js';

// Only compiled JavaScript ships. With NODE_ENV=development (or test) oclif would look for TypeScript sources of the
// commands, and in an installed copy, which has no TypeScript, warn on every command that it found none.
settings.enableAutoTranspile = false;

/** Runs the command `argv` names; the flags every command takes may come before it (nanopay --profile live balance). */
export function run(argv: string[], dir: string): Promise<unknown> {
  return execute({ dir, args: globalFlagsAfterCommand(argv) });
}
