// npm run bench:watch — how soon `status --watch` reports a payment: the time from the moment the
// sandbox's node accepts the payer's block to the moment the watcher prints `"is_paid":true`, on the
// node backend, with the node's WebSocket and with polling at the default interval (2 s). Both
// instants are taken in this process (the sandbox runs here). A benchmark, not a test: it prints figures.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startSandbox } from '../dist/sandbox/index.js';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 20);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'nanopay-bench-watch-'));
const sandbox = await startSandbox({ port: 0 });
const accepted = new Map();
sandbox.service.ledger.listeners.add((block) => accepted.set(block.hash, performance.now()));

const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NANOPAY_')));
const base = { ...inherited, NANOPAY_PASSWORD: 'bench', NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sandbox.url, NANOPAY_API_URL: sandbox.url, NO_COLOR: '1' };
const envOf = (name, ws) => ({ ...base, HOME: join(root, name), NANOPAY_CONFIG_DIR: join(root, name), ...(ws ? { NANOPAY_NODE_WS_URL: sandbox.wsUrl } : {}) });

function run(env, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args, '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`nanopay ${args.join(' ')} exited ${code}: ${out}`))));
  });
}

const merchant = envOf('merchant', false);
const customer = envOf('customer', false);
await run(merchant, ['wallet', 'create']);
const { address: payer } = await run(customer, ['wallet', 'create']);
sandbox.service.fund(payer, '100');
await run(customer, ['receive']);

/** One payment: a request, a watcher that has reported it unpaid (and subscribed), the payment, the watcher's report. */
async function once(ws) {
  const env = envOf('merchant', ws);
  const request = await run(env, ['request', '0.01']);
  const watcher = spawn(process.execPath, [BIN, 'status', request.transaction_id, '--watch', '--timeout', '60', '--json'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  let paidAt;
  watcher.stdout.on('data', (d) => {
    out += d;
    if (paidAt === undefined && out.includes('"is_paid":true')) paidAt = performance.now();
  });
  const exited = new Promise((resolve) => watcher.on('close', resolve));
  while (!out.includes('"is_paid":false') || (ws && sandbox.nodeSockets.subscribers() === 0)) await new Promise((r) => setTimeout(r, 20));
  // The payer's block as the node accepted it.
  const { hash } = await run(customer, ['pay', request.uri, '--yes']);
  if ((await exited) !== 0 || paidAt === undefined) throw new Error(`the watcher did not report ${request.transaction_id} paid`);
  return paidAt - accepted.get(hash);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const figures = {};
for (const [mode, ws] of [['websocket', true], ['polling (2 s)', false]]) {
  const times = [];
  for (let i = 0; i < PAYMENTS; i++) times.push(await once(ws));
  figures[mode] = times;
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`${mode.padEnd(14)} n=${times.length}  median ${median(times).toFixed(1)} ms  min ${sorted[0].toFixed(1)} ms  max ${sorted.at(-1).toFixed(1)} ms`);
}
console.log(`goal with the WebSocket: median under 100 ms — ${median(figures.websocket) < 100 ? 'met' : 'not met'}`);
await sandbox.close();
rmSync(root, { recursive: true, force: true });
