import { SessionCommand } from '../cli/session-command.js';
import { serveMcp } from '../toolset/mcp.js';
import { openToolsetSession } from '../toolset/session.js';

export default class Mcp extends SessionCommand {
  static override summary = 'Serve the seven tools over MCP on stdio (for agents).';
  static override description = 'Standard output carries only protocol messages; logs go to stderr. Unlocks the wallet once at start; spending limits apply.';
  static override examples = ['NANOPAY_PASSWORD=… <%= config.bin %> mcp'];

  async run(): Promise<void> {
    const { flags } = await this.parse(Mcp);
    const log = (line: string): void => void process.stderr.write(`${line}\n`);
    const { session, refreshWork } = await openToolsetSession(
      { password: this.passwordSource(flags), frontEnd: 'mcp', ...(flags.profile === undefined ? {} : { profile: flags.profile }) },
      log,
    );
    const { closed } = await serveMcp(session, { version: this.config.version, log, afterWrite: refreshWork });
    await closed;
  }
}
