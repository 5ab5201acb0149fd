import { NanoPayError, redactUrl } from '../errors.js';
import { functionName, type Tool } from '../toolset/tools.js';

/** An OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, llama.cpp, vLLM…). */
export interface ModelConfig {
  /** The base URL (…/v1) or the full …/chat/completions URL. */
  url: string;
  model: string;
  key?: string;
  timeoutMs?: number;
}

export interface ToolCallRequest {
  id: string;
  name: string;
  /** The arguments as the model wrote them: a JSON text, maybe not valid. */
  arguments: string;
}

export type ModelMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ModelReply {
  content: string | null;
  toolCalls: ToolCallRequest[];
}

export function modelFromEnv(env: NodeJS.ProcessEnv): ModelConfig | undefined {
  const url = env.NANOPAY_AGENT_MODEL_URL;
  const model = env.NANOPAY_AGENT_MODEL;
  if (!url || !model) return undefined;
  return { url, model, ...(env.NANOPAY_AGENT_MODEL_KEY ? { key: env.NANOPAY_AGENT_MODEL_KEY } : {}) };
}


/** The tools as the endpoint expects them: the same names, descriptions and schemas as HTTP and MCP. */
export function functionsOf(tools: readonly Tool[]): unknown[] {
  return tools.map((tool) => ({ type: 'function', function: { name: functionName(tool.name), description: tool.description, parameters: tool.inputSchema } }));
}

function endpoint(url: string): string {
  const base = url.replace(/\/+$/, '');
  return base.endsWith('/chat/completions') ? base : `${base}/chat/completions`;
}

/** One completion (not streamed: the agent streams its own events, one per step). */
export async function complete(config: ModelConfig, messages: ModelMessage[], tools: unknown[], signal: AbortSignal): Promise<ModelReply> {
  const shown = redactUrl(endpoint(config.url));
  let response: Response;
  try {
    response = await fetch(endpoint(config.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(config.key === undefined ? {} : { authorization: `Bearer ${config.key}` }) },
      body: JSON.stringify({ model: config.model, messages, tools, tool_choice: 'auto', stream: false }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(config.timeoutMs ?? 120_000)]),
    });
  } catch (error) {
    if (signal.aborted) throw new NanoPayError('CANCELLED', 'The chat was cancelled');
    throw new NanoPayError('REQUEST_ERROR', `The language model at ${shown} could not be reached: ${(error as Error).name}`);
  }
  // The answer's body is not shown: an endpoint may echo what it was sent.
  if (!response.ok) throw new NanoPayError('REQUEST_ERROR', `The language model at ${shown} answered HTTP ${response.status}`);
  let body: { choices?: { message?: { content?: unknown; tool_calls?: unknown } }[] };
  try {
    body = (await response.json()) as typeof body;
  } catch {
    throw new NanoPayError('PARSE_ERROR', `The language model at ${shown} answered with something that is not JSON`);
  }
  const message = body.choices?.[0]?.message;
  if (message === undefined) throw new NanoPayError('INVALID_DATA', `The language model at ${shown} answered without a message`);
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[]) : [];
  return {
    content: typeof message.content === 'string' && message.content !== '' ? message.content : null,
    toolCalls: calls.map((call, i) => ({
      id: typeof call.id === 'string' ? call.id : `call_${i}`,
      name: String(call.function?.name ?? ''),
      arguments: typeof call.function?.arguments === 'string' ? call.function.arguments : JSON.stringify(call.function?.arguments ?? {}),
    })),
  };
}
