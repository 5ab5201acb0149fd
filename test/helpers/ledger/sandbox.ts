import { startSandbox, type RunningSandbox, type SandboxOptions } from '../../../src/sandbox/index.js';

/** A real sandbox on an ephemeral loopback port. */
export function sandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  return startSandbox({ port: 0, ...options });
}

export async function fund(url: string, address: string, amount: string): Promise<string> {
  const response = await fetch(`${url}/sandbox/fund`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address, amount }),
  });
  const body = (await response.json()) as { success: boolean; data: { hash: string }; error: unknown };
  if (!body.success) throw new Error(`faucet failed: ${JSON.stringify(body.error)}`);
  return body.data.hash;
}

export interface LedgerDump {
  accounts: { address: string; balance: string; frontier: string; height: number | string }[];
  blocks: { hash: string; account: string; subtype: string; amount: string; balance: string; height: number | string; previous?: string }[];
}

export async function ledger(url: string): Promise<LedgerDump> {
  const body = (await (await fetch(`${url}/sandbox/ledger`)).json()) as { data: LedgerDump };
  return body.data;
}
