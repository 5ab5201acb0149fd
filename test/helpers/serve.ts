import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, type CliUser } from './cli.js';

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  stderr: () => string;
  stop(): Promise<void>;
}

/** Runs `nanopay serve` as a child process on a free port and waits until it listens. */
export async function startServe(user: CliUser, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json', ...args], { env: { ...user.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined) {
        try {
          resolve((JSON.parse(line) as { url: string }).url);
        } catch {
          reject(new Error(`serve printed ${line}`));
        }
      }
    });
    child.on('close', (code) => reject(new Error(`serve exited ${code}: ${err}${out}`)));
  });
  return {
    url,
    child,
    stderr: () => err,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
