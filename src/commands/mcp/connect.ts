import { Args, Flags } from '@oclif/core';
import { SessionCommand, commandAfterDashes } from '../../cli/session-command.js';
import { NanoPayError } from '../../errors.js';
import { publicFailure } from '../../http/respond.js';
import { mcpIdentity } from '../../ops/spending/hosts.js';
import { callToolPaying } from '../../x402/mcp/tool-buyer.js';
import { serveStdioProxy } from '../../x402/mcp/stdio-proxy.js';

export default class McpConnect extends SessionCommand {
  static override summary = 'Front another MCP server for an agent, paying its priced tools (x402 over MCP) in Nano within the spending policy.';
  static override description = `Starts the MCP server given after -- (stdio) and serves its tools on this process's stdio, for an agent's plain MCP
client. A tool that answers with an x402 payment-required result is paid (Nano exact, within --max or x402-max) and
called again with the payment; its answer goes back with the settlement in _meta. Each payment is judged by the
spending policy as an x402 payment to mcp:NAME/TOOL: host rules on mcp:NAME take in every tool of the server, and rules
on mcp:NAME/TOOL one tool (nanopay policy set per-send 0.001 --host mcp:weather/forecast). A payment counts only once our
ledger shows it confirmed. A refusal (policy, maximum) is the tool's error result, naming the rule; nothing is paid.
Signs through the unlocked session (nanopay unlock --scope mcp) or the password; logs go to stderr.`;
  static override examples = ['<%= config.bin %> mcp connect weather --max 0.01 -- node weather-server.js'];
  static override strict = false;
  static override args = { name: Args.string({ description: 'the name the spending policy and the audit know this server by (mcp:NAME)', required: true }) };
  static override flags = {
    max: Flags.string({ description: 'the most one tool call may cost, in XNO (default: the profile x402-max)' }),
    wallet: Flags.string({ description: 'wallet to pay from instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
    session: Flags.boolean({ description: 'pay in a Nano session where a tool offers one: one deposit, then a voucher a call (nanopay sessions closes it)' }),
    'session-deposit': Flags.string({ description: "a new session's deposit in XNO (default: the server's least)", dependsOn: ['session'] }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(McpConnect);
    const [program, ...rest] = commandAfterDashes(this.argv);
    if (mcpIdentity(`mcp:${args.name}`) === undefined) throw new NanoPayError('USAGE', `"${args.name}" is not a server name: letters, digits, . _ - (it is named mcp:${args.name} in the policy)`);
    if (program === undefined) throw new NanoPayError('USAGE', 'mcp connect needs the MCP server to front, after --: nanopay mcp connect NAME -- COMMAND [ARGS…]');
    const session = this.session(flags, 'mcp');
    const log = (line: string): void => void process.stderr.write(`${line}\n`);
    const options = {
      ...(flags.max === undefined ? {} : { maxXno: flags.max }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
      ...(flags.session ? { session: flags['session-deposit'] === undefined ? {} : { depositXno: flags['session-deposit'] } } : {}),
    };
    const { closed } = await serveStdioProxy({
      command: program,
      args: rest,
      name: 'nanopay-mcp-connect',
      version: this.config.version,
      call: async ({ name, args: toolArgs, signal }, upstream) => {
        try {
          const { result, payment, session: inSession } = await callToolPaying(session, upstream, args.name, name, toolArgs, { ...options, signal });
          if (payment !== undefined) log(`tool ${name}: paid ${payment.amount} XNO to ${payment.pay_to} (block ${payment.hash}, confirmed)`);
          if (inSession !== undefined) log(`tool ${name}: paid ${inSession.amount} XNO in session ${inSession.session}${inSession.opened ? ' (opened now)' : ''}, call ${inSession.counter}`);
          return result;
        } catch (error) {
          // A refusal is the tool's error, so the agent reads why (the rule, what to do); never a protocol error.
          const failure = publicFailure(error);
          log(`tool ${name}: not paid: ${failure.code} ${failure.message}`);
          const envelope = { error: failure.code, message: failure.message, ...(failure.hint === undefined ? {} : { hint: failure.hint }), ...(failure.details ?? {}) };
          return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(envelope) }], structuredContent: envelope };
        }
      },
    });
    await closed;
  }
}
