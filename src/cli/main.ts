/**
 * The CLI's entry as bundled for bin/run.js: oclif and every command come from
 * one build, so they share one copy of @oclif/core and of our error classes.
 */
import { execute } from '@oclif/core';
import { globalFlagsAfterCommand } from './global-flags.js';

/** Runs the command `argv` names; the flags every command takes may come before it (nanopay --profile live balance). */
export function run(argv: string[], dir: string): Promise<unknown> {
  return execute({ dir, args: globalFlagsAfterCommand(argv) });
}
