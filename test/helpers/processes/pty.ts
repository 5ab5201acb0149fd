import { spawn, spawnSync } from 'node:child_process';
import { BIN } from './cli.js';

/** util-linux `script` gives a command a real pseudo-terminal (Debian has it; macOS's `script` takes other flags). */
export const ptyMissing: string | undefined = (() => {
  const probe = spawnSync('script', ['--version'], { encoding: 'utf8' });
  return probe.status === 0 && /util-linux/.test(probe.stdout) ? undefined : 'util-linux `script` is not installed, so there is no pseudo-terminal to test on';
})();

const quote = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`;

export interface Terminal {
  /** Everything the terminal showed so far (stdout and stderr together, as on a screen). */
  readonly output: string;
  /** Types on the keyboard: '\x03' is Ctrl-C, '\r' is Enter. */
  type(keys: string): void;
  /** Resolves once the screen shows `pattern`; rejects if the command ends first. */
  waitFor(pattern: RegExp | string, timeoutMs?: number): Promise<void>;
  /** The exit code (130 for Ctrl-C, as a shell reports it). */
  exited: Promise<number | null>;
}

/**
 * Runs the built CLI on a pseudo-terminal, as a user at a terminal would.
 * `columns` sizes it first; without it the terminal reports 0 columns, as a
 * pty nobody sized does.
 */
export function onTerminal(args: string[], env: NodeJS.ProcessEnv, options: { columns?: number; timeoutMs?: number } = {}): Terminal {
  const size = options.columns === undefined ? '' : `stty cols ${options.columns} rows 40; `;
  const command = `${size}exec ${quote(process.execPath)} ${[BIN, ...args].map(quote).join(' ')}`;
  const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  let ended = false;
  const listeners = new Set<() => void>();
  const seen = (): void => listeners.forEach((l) => l());
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    seen();
  });
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      ended = true;
      seen();
      resolve(code);
    }),
  );
  return {
    get output() {
      return output;
    },
    type: (keys) => void child.stdin.write(keys),
    exited,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          const found = typeof pattern === 'string' ? output.includes(pattern) : pattern.test(output);
          if (!found && !ended) return;
          listeners.delete(check);
          clearTimeout(timer);
          if (found) resolve();
          else reject(new Error(`The command ended before showing ${String(pattern)}:\n${output}`));
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`${String(pattern)} did not show within ${timeoutMs} ms:\n${output}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      }),
  };
}
