import { SessionCommand } from '../../cli/session-command.js';
import { serveMcp } from '../../toolset/mcp.js';
import { holdToolsetSession } from '../../toolset/session.js';

export default class Mcp extends SessionCommand {
  static override summary = 'Serve nanopay\'s tools over MCP on stdio (for agents).';
  static override description = `Standard output carries only protocol messages; logs go to stderr. Signs through the unlocked session (nanopay unlock
--scope mcp) or unlocks the wallet once at start; spending limits apply. It always completes the MCP handshake: while it
cannot serve (no wallet, no API key, no password source or session), every tool call answers why and what to run, and it
tries again at each call.`;
  static override examples = ['NANOPAY_PASSWORD=… <%= config.bin %> mcp'];

  async run(): Promise<void> {
    const { flags } = await this.parse(Mcp);
    const log = (line: string): void => void process.stderr.write(`${line}\n`);
    const holder = await holdToolsetSession(
      { password: this.passwordSource(flags), frontEnd: 'mcp', ...(flags.profile === undefined ? {} : { profile: flags.profile }) },
      log,
      'nanopay mcp',
    );
    const { closed } = await serveMcp(holder, { version: this.config.version, log, afterWrite: () => holder.refreshWork() });
    await closed;
  }
}
