// npm run bench:startup — how long commands take to start and answer, as a ratio to `node -e 0`
// measured side by side in one run: every round runs each command once, in turn, so a busy
// moment of the machine hits them all alike. A benchmark, not a test: it prints figures.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSandbox } from '../dist/sandbox/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));

const configDir = mkdtempSync(join(tmpdir(), 'nanopay-bench-startup-'));
const sandbox = await startSandbox({ port: 0 });
// A key made by the sandbox itself, given through the environment: the figure is start-up and one
// request, not unlocking the key store (scrypt is slow on purpose).
const { api_key: apiKey, address } = sandbox.service.createWallet();
// The caller's environment (what a shell script's commands get, node's own variables included),
// less any nanopay settings of theirs.
const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NANOPAY_')));
const env = { ...inherited, HOME: configDir, NANOPAY_CONFIG_DIR: configDir, NANOPAY_API_URL: sandbox.url, NANOPAY_API_KEY: apiKey, NO_COLOR: '1' };

// `balance --json` of the active account of a wallet made by the service, whose API key is in the key
// store: once unlocking the store with the password (scrypt), once through an unlocked session
// (`nanopay unlock`, no password given). Each has its own config dir, so the session serves only the second.
const lockedDir = mkdtempSync(join(tmpdir(), 'nanopay-bench-locked-'));
const unlockedDir = mkdtempSync(join(tmpdir(), 'nanopay-bench-unlocked-'));
const withoutKey = Object.fromEntries(Object.entries(env).filter(([name]) => name !== 'NANOPAY_API_KEY'));
const lockedEnv = { ...withoutKey, HOME: lockedDir, NANOPAY_CONFIG_DIR: lockedDir, NANOPAY_PASSWORD: 'bench password' };
const unlockedEnv = { ...withoutKey, HOME: unlockedDir, NANOPAY_CONFIG_DIR: unlockedDir };

/** Runs the CLI to set things up (asynchronously: the sandbox answers from this very process). */
function setup(args, childEnv) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: childEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`nanopay ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

const cases = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'nanopay --version', args: [BIN, '--version'], goal: 2.0 },
  { name: 'nanopay wallet list --json', args: [BIN, 'wallet', 'list', '--json'], goal: 3.0 },
  { name: 'nanopay --help', args: [BIN, '--help'], goal: 3.0 },
  { name: 'nanopay send --help', args: [BIN, 'send', '--help'], goal: 3.0 },
  { name: 'nanopay balance ADDRESS --json', args: [BIN, 'balance', address, '--json'], goal: 3.5 },
  { name: 'nanopay balance --json (password)', args: [BIN, 'balance', '--json'], env: lockedEnv },
  { name: 'nanopay balance --json (unlocked)', args: [BIN, 'balance', '--json'], env: unlockedEnv },
];

/** One run in a child process, timed from spawn to exit; the sandbox answers from this process's event loop. */
function time(args, childEnv = env) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code !== 0) reject(new Error(`${args.slice(1).join(' ')} exited ${code}: ${stderr}`));
      else resolve(ms);
    });
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

try {
  await setup(['wallet', 'create', '--remote'], lockedEnv);
  await setup(['wallet', 'create', '--remote'], { ...unlockedEnv, NANOPAY_PASSWORD: 'bench password' });
  await setup(['unlock', '--for', '1h'], { ...unlockedEnv, NANOPAY_PASSWORD: 'bench password' });
  // One warm-up round so the file cache is the same for every command, and Node's compile cache in each config dir
  // (bin/run.js) is filled, as after a user's first command.
  for (const c of cases) await time(c.args, c.env);
  const samples = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of cases.entries()) samples[i].push(await time(c.args, c.env));
  }
  const base = median(samples[0]);
  console.log(`Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Node ${process.version}; median of ${ROUNDS} interleaved runs\n`);
  for (const [i, c] of cases.entries()) {
    const ms = median(samples[i]);
    const ratio = ms / base;
    const goal = c.goal === undefined ? '' : `   goal <= ${c.goal.toFixed(1)}x ${ratio <= c.goal ? 'met' : 'MISSED'}`;
    console.log(`${c.name.padEnd(36)} ${ms.toFixed(0).padStart(5)} ms  ${ratio.toFixed(2)}x${goal}`);
  }
} finally {
  await setup(['lock'], unlockedEnv).catch(() => undefined);
  await sandbox.close();
  for (const dir of [configDir, lockedDir, unlockedDir]) rmSync(dir, { recursive: true, force: true });
}
