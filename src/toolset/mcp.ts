import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { SANDBOX_NOTE, talkedToSandbox, withSandboxMark } from '../ops/observe.js';
import { errorEnvelope, publicFailure } from '../http/respond.js';
import type { ToolsetHolder } from './session.js';
import { TOOLS, functionName, lookupTool, runTool } from './tools.js';

export interface McpOptions {
  version: string;
  log?: (line: string) => void;
  afterWrite?: () => void;
}

/**
 * The tools over MCP on stdio. A result carries the spec's envelope as
 * JSON text and as structured content; a failed tool is an error result with
 * the code and message, never a protocol error. stdout is the protocol's alone.
 * Answers of the sandbox make it `"sandbox": true`, with the note in words
 * beside it, so an agent can tell its user the money was test money. It
 * completes the handshake whatever happens: while its session cannot be
 * opened, every call answers why and what to run.
 */
export async function serveMcp(holder: ToolsetHolder, options: McpOptions): Promise<{ closed: Promise<void> }> {
  const server = new Server({ name: 'nanopay', version: options.version }, { capabilities: { tools: {} } });

  // Listed under names the main clients accept (wallet_send); the spec's dotted
  // names (wallet.send) are still answered on tools/call, for older clients.
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((tool) => ({
      name: functionName(tool.name),
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema,
      annotations: { title: tool.title, ...tool.annotations },
    })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const started = Date.now();
    const tool = lookupTool(request.params.name);
    if (tool === undefined) {
      const envelope = { success: false, data: null, error: { error: 'NOT_FOUND', message: `No tool named "${request.params.name}"` } };
      return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(envelope) }], structuredContent: envelope };
    }
    // A session that cannot be opened (no wallet, no password) answers its failure and hint, as the tool's error.
    const session = await holder.session().catch((error: unknown) => error as Error);
    const { envelope } = session instanceof Error ? { envelope: errorEnvelope(publicFailure(session)) } : await runTool(session, tool, request.params.arguments ?? {}, extra.signal);
    options.log?.(`tool ${functionName(tool.name)} ${envelope.success ? 'ok' : envelope.error?.error} ${Date.now() - started}ms`);
    if (tool.writes && envelope.success) options.afterWrite?.();
    const marked = withSandboxMark(envelope) as Record<string, unknown>;
    return {
      ...(envelope.success ? {} : { isError: true }),
      content: [{ type: 'text' as const, text: JSON.stringify(marked) }, ...(talkedToSandbox() ? [{ type: 'text' as const, text: `[${SANDBOX_NOTE}]` }] : [])],
      structuredContent: marked,
    };
  });

  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  await server.connect(transport);
  // The client closing our stdin ends the session.
  process.stdin.once('end', () => void transport.close());
  return { closed };
}

