import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Config } from '@oclif/core';
import Balance from '../commands/balance.js';
import Credits from '../commands/credits/index.js';
import CreditsTopup from '../commands/credits/topup.js';
import Donate from '../commands/donate.js';
import Lock from '../commands/lock.js';
import Pay from '../commands/pay.js';
import Receive from '../commands/receive.js';
import Request from '../commands/request.js';
import SandboxFund from '../commands/sandbox/fund.js';
import Status from '../commands/status.js';
import Unlock from '../commands/unlock.js';
import WalletCreate from '../commands/wallet/create.js';
import type { BalanceResult } from '../ops/account/balance.js';
import type { PaymentRequestResult } from '../ops/requests/payments.js';
import type { CreatedWallet } from '../ops/profile/wallet.js';
import { startSandbox } from '../sandbox/index.js';

/**
 * The main job: the whole product flow against the embedded sandbox, with no
 * configuration and no network. Every step runs a real nanopay command, the
 * same code a user runs, in this process.
 */
const say = (line = ''): void => void process.stdout.write(`${line}\n`);

/** `--backend node`: the same flow through the sandbox's node RPC and WebSocket instead of the service's API. */
function backendOf(argv: string[]): 'service' | 'node' {
  const i = argv.indexOf('--backend');
  const value = i === -1 ? 'service' : argv[i + 1];
  if (value !== 'service' && value !== 'node') throw new Error('--backend is service or node');
  return value;
}

async function main(): Promise<void> {
  const backend = backendOf(process.argv.slice(2));
  const sandbox = await startSandbox({ port: 0 });
  const configDir = await mkdtemp(join(tmpdir(), 'nanopay-demo-'));
  Object.assign(process.env, {
    NANOPAY_CONFIG_DIR: configDir,
    NANOPAY_API_URL: sandbox.url,
    NANOPAY_PASSWORD: randomBytes(12).toString('base64url'),
    ...(backend === 'node' ? { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sandbox.url, NANOPAY_NODE_WS_URL: sandbox.wsUrl } : {}),
  });
  const config = await Config.load(new URL('../..', import.meta.url).pathname);

  /** Runs one command as `nanopay …` would, stopping the demo if it fails. */
  async function nanopay<T>(command: { run(argv: string[], config: Config): Promise<unknown> }, name: string, argv: string[]): Promise<T> {
    say(`\n$ nanopay ${name} ${argv.join(' ')}`);
    const result = await command.run(argv, config);
    if (process.exitCode !== undefined && process.exitCode !== 0) throw new Error(`nanopay ${name} ${argv.join(' ')} failed`);
    return result as T;
  }

  try {
    say(`nanopay demo: sandbox at ${sandbox.url}, config in ${configDir}`);
    if (backend === 'node') say(`Backend: node — the sandbox's node RPC (${sandbox.url}) and WebSocket (${sandbox.wsUrl}); nanopay keeps the payment requests.`);
    say('Two profiles share this machine: "merchant" (a shop) and "customer".');

    // On a node there is no service to make wallets: the keys are made here.
    const remote = backend === 'service' ? ['--remote'] : [];
    const merchant = await nanopay<CreatedWallet>(WalletCreate, 'wallet create', [...remote, '--name', 'shop', '--profile', 'merchant']);
    const customer = await nanopay<CreatedWallet>(WalletCreate, 'wallet create', [...remote, '--name', 'everyday', '--profile', 'customer']);

    say('\n# Each profile unlocked once, as a script of many commands would: what follows needs no password (no scrypt)');
    await nanopay(Unlock, 'unlock', ['--for', '10m', '--profile', 'merchant']);
    await nanopay(Unlock, 'unlock', ['--for', '10m', '--profile', 'customer']);

    await nanopay(SandboxFund, 'sandbox fund', ['--amount', '10', '--profile', 'customer']);
    await nanopay(Balance, 'balance', ['--receive', '--profile', 'customer']);

    const request = await nanopay<PaymentRequestResult>(Request, 'request', ['1.5', '--qr', '--redirect-url', 'https://shop.example/thanks', '--profile', 'merchant']);

    say('\n# The merchant watches the request while the customer pays the nano: URI');
    const watching = nanopay(Status, 'status', [request.transaction_id, '--watch', '--interval', '1', '--timeout', '60', '--profile', 'merchant']);
    await sleep(300);
    await nanopay(Pay, 'pay', [request.uri, '--yes', '--profile', 'customer']);
    await watching;

    await nanopay(Receive, 'receive', ['--profile', 'merchant']);
    const shop = await nanopay<BalanceResult>(Balance, 'balance', ['--profile', 'merchant']);
    const wallet = await nanopay<BalanceResult>(Balance, 'balance', ['--profile', 'customer']);

    if (backend === 'service') {
      await nanopay(Credits, 'credits', ['--profile', 'merchant']);
      await nanopay(CreditsTopup, 'credits topup', ['100', '--yes', '--profile', 'merchant']);
      await nanopay(Donate, 'donate', ['0.1', '--yes', '--profile', 'customer']);
    } else {
      say('\n# Credits and top-ups belong to the service; on a node, donate names the address');
      await nanopay(Donate, 'donate', ['0.1', '--yes', '--to', merchant.address, '--profile', 'customer']);
    }

    say('\n# Summary');
    say(`merchant ${merchant.address}: received ${request.amount} XNO for request ${request.transaction_id}, balance ${shop.balance} XNO${backend === 'service' ? ' before buying credits' : ''}`);
    say(`customer ${customer.address}: funded 10 XNO, paid ${request.amount} XNO, balance ${wallet.balance} XNO before donating 0.1 XNO`);
    await nanopay(Lock, 'lock', ['--all']);
    say('Demo complete.');
  } finally {
    await sandbox.close();
    await rm(configDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`Demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
