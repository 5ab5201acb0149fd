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
