import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { hashBlock, signBlockHash, type LegacyBlock } from '../../../src/nano/index.js';
import type { Session } from '../../../src/ops/session.js';
import { NETWORK_THRESHOLDS, generateWork } from '../../../src/work/index.js';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import { newUser, type CliUser } from '../processes/cli.js';
import { startCommand } from '../processes/serve.js';
import { tempDir } from '../processes/temp.js';
import { userSession } from './backend-users.js';
import { freePort } from '../network/free-port.js';

/**
 * The reference nano_node (V27.1, nanocurrency/nano-node) on its `dev` network, one per test suite: its
 * own data dir and free ports on 127.0.0.1, no peers, RPC with control actions and the WebSocket. `.ci/run`
 * unpacks the binary and exports its path as NANO_NODE_BIN (docs/development.md says how to get one).
 */

/** The dev network's genesis (public test material, nano-node's nano/secure/common.cpp). */
export const DEV_GENESIS = {
  key: '34F0A37AAD20F4A260F0A5B3CB3D7FB50673212263E58A380BC10474BB039CE4',
  address: 'nano_3e3j5tkog48pnny9dmfzj1r16pg8t1e76dz5tmac6iq689wyjfpiij4txtdo',
} as const;

type Json = Record<string, unknown>;

export interface RealNode {
  rpcUrl: string;
  wsUrl: string;
  pid: number;
  dataDir: string;
  /** The node's own wallet holding the genesis key: it votes (a lone node confirms nothing otherwise) and funds. */
  walletId: string;
  rpc(action: string, params?: Json): Promise<Json>;
  /** Sends `raw` from the genesis account to `address` (the node makes the block); its hash, once confirmed. */
  fund(address: string, raw: bigint): Promise<string>;
  waitConfirmed(hash: string, timeoutMs?: number): Promise<void>;
  /** The ledger's epoch upgrades (1 then 2), as the live network has had them: accounts are then epoch 2. */
  upgradeEpochs(): Promise<void>;
  /**
   * A legacy block of the genesis account (send, receive or change: `block_create` of its type, with the
   * fields it needs), processed and confirmed: what old chains hold. Only before the epoch upgrades.
   */
  genesisLegacy(fields: { type: 'send'; destination: string; amount: bigint } | { type: 'receive'; source: string } | { type: 'change'; representative: string }): Promise<string>;
  /** Kills the node at once (SIGKILL), keeping its data; `start` brings it back on the same ports. */
  kill(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Why the real-node tier cannot run here, or undefined when it can. In CI (CI=true) it must run: a missing binary fails there. */
export function realNodeUnavailable(): string | undefined {
  const bin = process.env.NANO_NODE_BIN;
  let why: string | undefined;
  if (bin === undefined || bin === '') why = 'NANO_NODE_BIN is not set (docs/development.md: the real Nano node)';
  else {
    try {
      accessSync(bin, constants.X_OK);
    } catch {
      why = `NANO_NODE_BIN=${bin} is not an executable file`;
    }
  }
  if (why !== undefined && process.env.CI === 'true') throw new Error(`The real nano_node is required in CI: ${why}`);
  return why;
}

function nodeConfig(ports: { peer: number; ws: number }): string {
  return `[node]
peering_port = ${ports.peer}
preconfigured_peers = []
allow_local_peers = true
enable_voting = true
work_threads = 1
work_peers = []
# account_info of an unopened account starts a lazy bootstrap; with no peers its pulls would spin a core.
bootstrap_initiator_threads = 0

[node.websocket]
enable = true
address = "::ffff:127.0.0.1"
port = ${ports.ws}

[node.ipc.tcp]
enable = false

[node.ipc.local]
enable = false

[rpc]
enable = true

[rpc.child_process]
enable = false
`;
}

async function post(url: string, body: Json): Promise<Json> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  return (await response.json()) as Json;
}

export async function startRealNode(options: { upgraded?: boolean } = {}): Promise<RealNode> {
  const bin = process.env.NANO_NODE_BIN;
  if (bin === undefined) throw new Error('NANO_NODE_BIN is not set');
  const dataDir = await tempDir('nanopay-nano-node-');
  const choosePorts = async (): Promise<{ peer: number; rpc: number; ws: number }> => {
    const chosen = { peer: await freePort(), rpc: await freePort(), ws: await freePort() };
    await writeFile(join(dataDir, 'config-node.toml'), nodeConfig(chosen));
    await writeFile(join(dataDir, 'config-rpc.toml'), `address = "::ffff:127.0.0.1"\nport = ${chosen.rpc}\nenable_control = true\n`);
    return chosen;
  };
  let ports = await choosePorts();
  let rpcUrl = `http://127.0.0.1:${ports.rpc}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const rpc = async (action: string, params: Json = {}): Promise<Json> => {
    const answer = await post(rpcUrl, { action, ...params });
    if (typeof answer.error === 'string') throw new Error(`nano_node ${action}: ${answer.error}`);
    return answer;
  };

  const start = async (): Promise<void> => {
    const env = { ...process.env };
    delete env.NANO_DEFAULT_PEER;
    const log = createWriteStream(join(dataDir, 'node.out'), { flags: 'a' });
    const started = spawn(
      bin,
      ['--daemon', '--network=dev', '--data_path', dataDir, '--disable_ascending_bootstrap', '--disable_legacy_bootstrap', '--disable_lazy_bootstrap', '--disable_wallet_bootstrap', '--disable_ongoing_bootstrap', '--disable_add_initial_peers'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    started.stdout?.pipe(log);
    started.stderr?.pipe(log);
    child = started;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (started.exitCode !== null) {
        // The data dir goes with the run: what the node said is kept in the error.
        const said = await readFile(join(dataDir, 'node.out'), 'utf8').catch(() => '');
        throw new Error(`nano_node exited at start (exit ${started.exitCode}): ${said.slice(-1500)}`);
      }
      const ready = await post(rpcUrl, { action: 'version' }).catch(() => undefined);
      if (ready?.node_vendor !== undefined) return;
      if (Date.now() > deadline) throw new Error('nano_node did not answer RPC within 60 s');
      await sleep(100);
    }
  };

  const waitConfirmed = async (hash: string, timeoutMs = 30_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const info = await post(rpcUrl, { action: 'block_info', hash, json_block: 'true' });
      if (info.confirmed === 'true' || info.confirmed === true) return;
      if (Date.now() > deadline) throw new Error(`block ${hash} was not confirmed within ${timeoutMs} ms`);
      await sleep(25);
    }
  };

  const stopChild = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    running.kill(signal);
    const timer = setTimeout(() => running.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };

  // A port another process took between freePort and the node's bind ends the node at once: new ports, up to three times.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      if (attempt === 3 || child?.exitCode === null) throw error;
      ports = await choosePorts();
      rpcUrl = `http://127.0.0.1:${ports.rpc}`;
    }
  }
  let walletId: string;
  try {
    walletId = String((await rpc('wallet_create')).wallet);
    await rpc('wallet_add', { wallet: walletId, key: DEV_GENESIS.key });
  } catch (error) {
    await stopChild('SIGTERM');
    throw error;
  }

  const node: RealNode = {
    rpcUrl,
    wsUrl: `ws://127.0.0.1:${ports.ws}`,
    get pid() {
      return child?.pid ?? 0;
    },
    dataDir,
    walletId,
    rpc,
    waitConfirmed,
    async fund(address, raw) {
      const hash = String((await rpc('send', { wallet: walletId, source: DEV_GENESIS.address, destination: address, amount: raw.toString() })).block);
      await waitConfirmed(hash);
      return hash;
    },
    async upgradeEpochs() {
      for (const epoch of ['1', '2']) {
        await rpc('epoch_upgrade', { epoch, key: DEV_GENESIS.key });
        const deadline = Date.now() + 30_000;
        for (;;) {
          const info = await rpc('account_info', { account: DEV_GENESIS.address });
          if (String(info.account_version) === epoch && info.confirmation_height === info.block_count) break;
          if (Date.now() > deadline) throw new Error(`epoch ${epoch} upgrade did not complete within 30 s`);
          await sleep(50);
        }
      }
    },
    async genesisLegacy(fields) {
      // Built, hashed and signed here (nano-node's block_create fails on a legacy change): the node's acceptance checks our hashing too.
      const head = await rpc('account_info', { account: DEV_GENESIS.address });
      const previous = String(head.frontier);
      const block: LegacyBlock =
        fields.type === 'send'
          ? { type: 'send', previous, destination: fields.destination, balance: (BigInt(String(head.balance)) - fields.amount).toString() }
          : fields.type === 'receive'
            ? { type: 'receive', previous, source: fields.source }
            : { type: 'change', previous, representative: fields.representative };
      const hash = hashBlock(block);
      const json = { ...block, ...(block.type === 'send' ? { balance: BigInt(block.balance).toString(16).toUpperCase().padStart(32, '0') } : {}) };
      const signed = { ...json, signature: signBlockHash(hash, DEV_GENESIS.key), work: await generateWork(previous, NETWORK_THRESHOLDS.dev.epoch1) };
      expect(String((await rpc('process', { json_block: 'true', block: signed })).hash)).toBe(hash);
      await waitConfirmed(hash);
      return hash;
    },
    kill: () => stopChild('SIGKILL'),
    start,
    stop: () => stopChild('SIGTERM'),
  };
  if (options.upgraded === true) await node.upgradeEpochs();
  return node;
}

/** A user whose profile uses `node` (RPC and WebSocket), with a wallet made on this machine (in-process). */
export async function nodeUser(node: RealNode, extraEnv: NodeJS.ProcessEnv = {}): Promise<{ user: CliUser; session: Session; address: string }> {
  const user = await newUser(node.rpcUrl, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: node.rpcUrl, NANOPAY_NODE_WS_URL: node.wsUrl, ...extraEnv });
  const session = userSession(user);
  const { address } = await createWallet(session);
  return { user, session, address };
}

/** A line `status --watch --json` prints. */
export interface StatusEvent {
  event: string;
  status?: string;
  is_paid?: boolean;
  paid_by?: string[];
}

/** `status ID --watch` of `merchant` with an hour between polls: only the node's WebSocket (or the check after it connects) sees a payment. */
export async function watchStatus(merchant: { user: CliUser }, id: string): Promise<{ events: () => StatusEvent[]; exited: Promise<number | null> }> {
  const running = await startCommand<StatusEvent>(['status', id, '--watch', '--interval', '3600', '--timeout', '60', '--json'], merchant.user.env);
  expect(running.printed).toMatchObject({ event: 'status', is_paid: false });
  const exited = new Promise<number | null>((resolve) => {
    if (running.child.exitCode !== null) resolve(running.child.exitCode);
    running.child.once('close', (code) => resolve(code));
  });
  const events = () =>
    running
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as StatusEvent);
  return { events, exited };
}
