import type { Command } from '@oclif/core';

/** Summaries of plugin commands that have none (@oclif/plugin-version's). */
const FALLBACK: Record<string, string> = {
  version: 'Show the version of nanopay, the platform and Node.js.',
};

/** A command's one-line summary for lists (help, completion): its summary, else its description's first line. */
export function commandSummary(command: Pick<Command.Loadable, 'id' | 'summary' | 'description'>): string {
  return (command.summary ?? command.description ?? FALLBACK[command.id] ?? '').split('\n')[0] ?? '';
}
