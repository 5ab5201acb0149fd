/**
 * Whether this process has talked to nanopay's sandbox: it marks every answer
 * with `Nanopay-Sandbox: 1` (SANDBOX_HEADER), and the transport notes it, so a
 * command can say that its money was test money. A real service never sends
 * the header; an answer without it changes nothing.
 */
export const SANDBOX_HEADER = 'nanopay-sandbox';

let seen = false;

export function noteSandboxAnswer(value: string | string[] | undefined): void {
  if (value === '1') seen = true;
}

export function talkedToSandbox(): boolean {
  return seen;
}

/** What a front end says in words of output that used the sandbox's answers. */
export const SANDBOX_NOTE = 'sandbox: these amounts are test money on nanopay\'s sandbox, not real XNO';

/** A JSON document (CLI output, a toolset envelope, an NDJSON event) gets `"sandbox": true` when the answers came from the sandbox; real-money output is unchanged. */
export function withSandboxMark(json: unknown): unknown {
  if (!seen || typeof json !== 'object' || json === null || Array.isArray(json)) return json;
  return { ...json, sandbox: true };
}
