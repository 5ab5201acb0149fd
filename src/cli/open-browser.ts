import { spawn } from 'node:child_process';

/** The platform's "open this URL" command, or why there is none. */
function opener(url: string): { command: string; args: string[] } | string {
  if (process.platform === 'darwin') return { command: 'open', args: [url] };
  if (process.platform === 'win32') return { command: 'cmd', args: ['/c', 'start', '""', url] };
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return 'there is no graphical session (DISPLAY and WAYLAND_DISPLAY are unset)';
  return { command: 'xdg-open', args: [url] };
}

/** Opens `url` in the system browser; resolves to why it could not, or undefined. */
export function openBrowser(url: string): Promise<string | undefined> {
  const how = opener(url);
  if (typeof how === 'string') return Promise.resolve(how);
  return new Promise((resolve) => {
    const child = spawn(how.command, how.args, { stdio: 'ignore', detached: true });
    child.once('error', (error: NodeJS.ErrnoException) => resolve(`${how.command} failed (${error.code ?? error.message})`));
    child.once('spawn', () => {
      child.unref();
      resolve(undefined);
    });
  });
}
