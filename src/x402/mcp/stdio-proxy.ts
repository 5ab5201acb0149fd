import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A tool call to the fronted server, without the caller's _meta (a payment there is this process's business). */
export async function forwardCall(upstream: Client, call: { name: string; args: Record<string, unknown>; signal: AbortSignal }): Promise<CallToolResult> {
  return (await upstream.callTool({ name: call.name, arguments: call.args }, undefined, { signal: call.signal })) as CallToolResult;
}

export interface StdioProxyOptions {
  /** The MCP server fronted, started as a child process speaking MCP on its stdio. */
  command: string;
  args: readonly string[];
  name: string;
  version: string;
  /** How a tool call is answered, with the client of the fronted server (`meta`: the call's own _meta, which is never forwarded as it is). */
  call(call: { name: string; args: Record<string, unknown>; meta: Record<string, unknown> | undefined; signal: AbortSignal }, upstream: Client): Promise<CallToolResult>;
}

/**
 * An MCP server on this process's stdio in front of another one it starts:
 * its tools listed as they are, each call answered through `call` (which
 * charges for it, or pays for it). The fronted server's stderr is ours; its
 * stdout is the protocol's alone. Closing either side ends both.
 */
export async function serveStdioProxy(options: StdioProxyOptions): Promise<{ closed: Promise<void> }> {
  const upstream = new Client({ name: options.name, version: options.version });
  // The fronted server is someone else's code: it gets our environment without nanopay's own variables (a password, an API key).
  const env = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && !entry[0].startsWith('NANOPAY_')));
  const child = new StdioClientTransport({ command: options.command, args: [...options.args], stderr: 'inherit', env });
  await upstream.connect(child);
  const server = new Server({ name: options.name, version: options.version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => upstream.listTools(request.params));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const { name, arguments: args = {}, _meta } = request.params;
    return options.call({ name, args, meta: _meta as Record<string, unknown> | undefined, signal: extra.signal }, upstream);
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    upstream.onclose = () => void server.close().then(resolve);
  });
  await server.connect(transport);
  process.stdin.once('end', () => void transport.close());
  void closed.then(() => upstream.close());
  return { closed };
}
