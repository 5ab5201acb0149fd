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

const cases = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'nanopay --version', args: [BIN, '--version'], goal: 2.0 },
  { name: 'nanopay wallet list --json', args: [BIN, 'wallet', 'list', '--json'], goal: 3.0 },
  { name: 'nanopay --help', args: [BIN, '--help'], goal: 3.0 },
  { name: 'nanopay send --help', args: [BIN, 'send', '--help'], goal: 3.0 },
  { name: 'nanopay balance ADDRESS --json', args: [BIN, 'balance', address, '--json'], goal: 3.5 },
];

/** One run in a child process, timed from spawn to exit; the sandbox answers from this process's event loop. */
function time(args) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
  // One warm-up round so the file cache is the same for every command.
  for (const c of cases) await time(c.args);
  const samples = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of cases.entries()) samples[i].push(await time(c.args));
  }
  const base = median(samples[0]);
  console.log(`Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Node ${process.version}; median of ${ROUNDS} interleaved runs\n`);
  for (const [i, c] of cases.entries()) {
    const ms = median(samples[i]);
    const ratio = ms / base;
    const goal = c.goal === undefined ? '' : `   goal <= ${c.goal.toFixed(1)}x ${ratio <= c.goal ? 'met' : 'MISSED'}`;
    console.log(`${c.name.padEnd(32)} ${ms.toFixed(0).padStart(5)} ms  ${ratio.toFixed(2)}x${goal}`);
  }
} finally {
  await sandbox.close();
  rmSync(configDir, { recursive: true, force: true });
}
