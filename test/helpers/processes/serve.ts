import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, type CliUser } from './cli.js';

/** A long-running nanopay command (serve, agent, checkout) started as a child process. */
export interface RunningCommand<T = Record<string, unknown>> {
  /** The one JSON document it printed once ready. */
  printed: T;
  child: ChildProcess;
  stderr: () => string;
  /** Everything it printed so far. */
  stdout: () => string;
  stop(): Promise<void>;
}

/** Runs `nanopay ARGS` and waits for the first line of stdout, its --json document; fails if it exits first. */
export async function startCommand<T = Record<string, unknown>>(args: string[], env: NodeJS.ProcessEnv): Promise<RunningCommand<T>> {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const printed = await new Promise<T>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (!out.includes('\n')) return;
      const line = out.split('\n')[0] as string;
      try {
        resolve(JSON.parse(line) as T);
      } catch {
        reject(new Error(`nanopay ${args[0]} printed ${line}`));
      }
    });
    child.on('close', (code) => reject(new Error(`nanopay ${args[0]} exited ${code}: ${err}${out}`)));
  });
  return {
    printed,
    child,
    stderr: () => err,
    stdout: () => out,
    stop: () =>
      new Promise<void>((resolve) => {
        // Ended already, by itself or by a signal (then exitCode stays null).
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export interface ServeProcess extends RunningCommand<{ url: string }> {
  url: string;
}

/** Runs `nanopay serve` on a free port and waits until it listens. */
export async function startServe(user: CliUser, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const running = await startCommand<{ url: string }>(['serve', '--port', '0', '--json', ...args], { ...user.env, ...env });
  return { ...running, url: running.printed.url };
}
