import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, type RunResult } from '../../helpers/processes/cli.js';
import { programProject, typecheck } from '../../helpers/processes/doc-programs.js';
import { docBlocks, docText, pathWithNanopay, type DocBlock } from '../../helpers/processes/docs.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { freePort } from '../../helpers/network/free-port.js';

/**
 * docs/x402.md as a reader follows it, with its blocks marked test=x402-guide: the two terminals' example (terminal 1:
 * the sandbox, python3's file server and the paywall; terminal 2: a buyer who pays for the listing), then in terminal 2
 * the @x402/fetch program, the @x402/express server (with a facilitator started in terminal 1, as the guide says) and
 * the payment lanes. Each terminal is bash with the guide's lines as they are, but for the guide's fixed ports, which
 * become free ones, its /tmp/shop and /tmp/buyer, which become directories of this test, and the server's `payTo`
 * placeholder, which becomes the shop's address.
 */
const GUIDE = 'docs/x402.md';
const PORTS = ['7076', '8080', '4020', '4021', '4022'];
const PLACEHOLDER = 'nano_1…';

// python3 serves the paywall's API and curl shows its 402, where they are installed; CI installs them (.ci/run).
const missing = ['python3', 'curl'].filter((tool) => spawnSync(tool, ['--version']).status !== 0);
if (missing.length > 0 && process.env.CI === undefined) console.warn(`x402-guide.test.ts: ${missing.join(' and ')} not installed, so docs/x402.md's example was not run (apt-get install ${missing.join(' ')})`);

/** A terminal left running (terminal 1, a server): its own process group, so stopping it stops what it started. */
interface Terminal {
  child: ChildProcess;
  output: () => string;
}

const terminals: Terminal[] = [];
let scripts = 0;
let dir: string;
let env: NodeJS.ProcessEnv;
let ports: Map<string, string>;
let blocks: DocBlock[];

/** A block of the guide as this test runs it: free ports, and its directories in this test's. */
function local(code: string): string {
  let text = code.replaceAll('/tmp/shop', join(dir, 'shop')).replaceAll('/tmp/buyer', join(dir, 'buyer'));
  for (const [fixed, free] of ports) text = text.replace(new RegExp(`\\b${fixed}\\b`, 'g'), free);
  return text;
}

function block(marker: string): DocBlock {
  const found = blocks.filter((b) => b.code.includes(marker));
  if (found.length !== 1) throw new Error(`${GUIDE}: ${found.length} blocks marked test=x402-guide hold "${marker}"`);
  return found[0] as DocBlock;
}

/** The `export …` line of a terminal's block: what makes a shell that terminal. */
function exportsOf(terminal: DocBlock): string {
  const line = terminal.code.split('\n').find((l) => l.startsWith('export '));
  if (line === undefined) throw new Error(`${GUIDE}:${terminal.line}: no export line`);
  return line;
}

/** Runs `script` in bash, as typed into a terminal (stopping at the first failing command), until it ends. */
async function run(script: string, cwd: string): Promise<RunResult> {
  const file = join(cwd, `script-${++scripts}.sh`);
  await writeFile(file, `set -e\n${local(script)}`);
  return runCommand('bash', [file], { cwd, env, timeoutMs: 120_000 });
}

/** Starts `script` in bash and waits until its output says `ready` (it fails if the script ends first). */
async function start(script: string, cwd: string, ready: string | RegExp): Promise<void> {
  const child = spawn('bash', ['-e', '-c', local(script)], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  terminals.push({ child, output: () => out });
  await new Promise<void>((resolve, reject) => {
    const matches = (): boolean => (typeof ready === 'string' ? out.includes(ready) : ready.test(out));
    const check = setInterval(() => {
      if (!matches()) return;
      clearInterval(check);
      resolve();
    }, 50);
    // 'exit', not 'close': what the script started in the background holds its output open.
    child.once('exit', (code) => {
      clearInterval(check);
      if (!matches()) setTimeout(() => reject(new Error(`the script ended (exit ${code}) before it said ${String(ready)}:\n${out}`)), 200);
    });
  });
}

/** Whether any process of the group `pgid` is still there. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops a terminal's process group (SIGTERM) and waits until every process of it is gone (up to 20 s). */
async function stop(terminal: Terminal): Promise<void> {
  const pgid = terminal.child.pid as number;
  if (!groupAlive(pgid)) return;
  process.kill(-pgid, 'SIGTERM');
  for (let waited = 0; groupAlive(pgid) && waited < 20_000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
  if (groupAlive(pgid)) throw new Error(`process group ${pgid} outlived SIGTERM by 20 s:\n${terminal.output()}`);
}

beforeAll(async () => {
  blocks = docBlocks(GUIDE, 'x402-guide');
  dir = await tempDir('nanopay-x402-guide-');
  ports = new Map();
  for (const fixed of PORTS) ports.set(fixed, String(await freePort()));
  for (const sub of ['www', 'buyer-cwd', 'home']) await mkdir(join(dir, sub));
  env = { PATH: await pathWithNanopay(dir), HOME: join(dir, 'home'), NO_COLOR: '1' };
});

afterAll(async () => {
  for (const terminal of terminals.reverse()) await stop(terminal);
});

describe.skipIf(missing.length > 0 && process.env.CI === undefined)(`${GUIDE}, followed as written`, () => {
  let programs: string;
  let terminal1: DocBlock;
  let terminal2: DocBlock;

  beforeAll(async () => {
    terminal1 = block('# terminal 1');
    terminal2 = block('# terminal 2');
    const [pay, server] = [block('wrapFetchWithPayment'), block('paymentMiddleware')];
    expect([pay.lang, server.lang]).toEqual(['ts', 'ts']);
    programs = await programProject({ pay: local(pay.code), server: local(server.code) });
  });

  it('its programs typecheck in strict mode against the real @x402 packages', async () => {
    const checked = await typecheck(programs);
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.code).toBe(0);
  }, 120_000);

  it('two terminals: the paywall in front of an API, and a buyer who pays for it on the sandbox', async () => {
    // Terminal 1 serves its current directory; the paywall's line says it listens.
    await start(terminal1.code, join(dir, 'www'), `x402 paywall (nano:dev): http://127.0.0.1:${ports.get('4021')} -> http://127.0.0.1:${ports.get('8080')}`);
    const buyer = await run(terminal2.code, join(dir, 'buyer-cwd'));
    expect(buyer.code, buyer.stdout + buyer.stderr).toBe(0);
    expect(buyer.stdout).toContain('Received 1 XNO');
    expect(buyer.stdout).toContain('HTTP/1.1 402 Payment Required');
    expect(buyer.stdout).toContain('Directory listing for /');
    expect(buyer.stderr).toMatch(/^Paid 0\.001 XNO to nano_\w+ \(block [0-9A-F]{64}, confirmed\)$/m);
  }, 120_000);

  it('in terminal 2, the @x402/fetch program pays the paywall', async () => {
    const paid = await run(`${exportsOf(terminal2)}\nnode pay.mts`, programs);
    expect(paid.code, paid.stdout + paid.stderr).toBe(0);
    expect(paid.stdout).toBe('200 paid\n');
  }, 120_000);

  it('the @x402/express server charges through the facilitator of terminal 1, and terminal 2 pays it', async () => {
    const guide = docText(GUIDE);
    const [facilitatorCommand, fetchCommand] = ['nanopay facilitator --port 4020', 'nanopay fetch http://127.0.0.1:4022/weather --max 0.01 --yes'];
    for (const said of [facilitatorCommand, fetchCommand]) expect(guide).toContain(`\`${said}\``);
    await start(`${exportsOf(terminal1)}\n${facilitatorCommand}`, join(dir, 'www'), 'x402 facilitator (Nano exact, nano:dev)');
    const wallets = await run(`${exportsOf(terminal1)}\nnanopay wallet list --json`, join(dir, 'www'));
    const shop = (JSON.parse(wallets.stdout) as { accounts: { address: string }[] }[])[0]?.accounts[0]?.address as string;
    const program = join(programs, 'server.mts');
    const source = local(block('paymentMiddleware').code);
    expect(source).toContain(`payTo: '${PLACEHOLDER}'`);
    await writeFile(program, source.replace(PLACEHOLDER, shop));
    const weather = `http://127.0.0.1:${ports.get('4022')}/weather`;
    const server = spawn(process.execPath, [program], { cwd: programs, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let serverOutput = '';
    for (const stream of [server.stdout, server.stderr]) stream?.on('data', (d: Buffer) => (serverOutput += d.toString()));
    terminals.push({ child: server, output: () => serverOutput });
    const status = async (): Promise<number | string | undefined> => (server.exitCode === null ? (await fetch(weather).catch(() => undefined))?.status : `exited ${server.exitCode}: ${serverOutput}`);
    await expect.poll(status, { timeout: 30_000, interval: 200 }).toBe(402);

    const paid = await run(`${exportsOf(terminal2)}\n${fetchCommand}`, join(dir, 'buyer-cwd'));
    expect(paid.code, paid.stdout + paid.stderr + serverOutput).toBe(0);
    expect(paid.stdout).toBe('{"weather":"sunny"}');
    expect(paid.stderr).toContain(`Paid 0.001 XNO to ${shop} (block `);
  }, 120_000);

  it('in terminal 2, lanes are set up and listed', async () => {
    const lanes = await run(`${exportsOf(terminal2)}\n${block('nanopay lanes set').code}`, join(dir, 'buyer-cwd'));
    expect(lanes.code, lanes.stdout + lanes.stderr).toBe(0);
    expect(lanes.stdout).toContain('Funded the lanes with 0.8 XNO.');
    expect(lanes.stdout.match(/^7 +nano_\w+ +0\.1 XNO/gm)).toHaveLength(2);
  }, 120_000);
});
