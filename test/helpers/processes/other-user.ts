import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { runCommand } from './cli.js';

const run = promisify(execFile);

/** One request as another user makes it (fetch in their own node process). */
export interface AsRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface AsReply {
  status: number;
  body: { success: boolean; data: Record<string, any> | null; error: { error: string; message: string } | null };
}

/** A throwaway account of this machine: another local user, as an attacker on a shared machine is. */
export interface OtherUser {
  name: string;
  uid: number;
  /** Makes the requests at once, from one node process running as this user; the replies in order. */
  fetch(base: string, requests: AsRequest[]): Promise<AsReply[]>;
  /** Runs this node with `args` as this user, in `env` only (and PATH), and what it printed and exited with. */
  node(args: string[], env?: NodeJS.ProcessEnv, input?: string): Promise<{ code: number | null; stdout: string; stderr: string }>;
  remove(): Promise<void>;
}

const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((p) => existsSync(p));
const USERADD = ['/usr/sbin/useradd', '/sbin/useradd'].find((p) => existsSync(p));
const USERDEL = ['/usr/sbin/userdel', '/sbin/userdel'].find((p) => existsSync(p));

/** Why other-user tests cannot run here, or undefined when they can (root, with useradd and runuser). */
export const otherUserUnavailable: string | undefined =
  process.platform !== 'linux'
    ? 'not Linux'
    : process.geteuid?.() !== 0
      ? 'not root (useradd needs root)'
      : USERADD === undefined || USERDEL === undefined || RUNUSER === undefined
        ? 'useradd, userdel or runuser is missing'
        : undefined;

if (otherUserUnavailable !== undefined) console.warn(`tests with a second local user are skipped: ${otherUserUnavailable}`);

// Runs in the other user's node: argv[1] is the base URL, argv[2] the requests as JSON.
const SCRIPT = `
const [base, list] = process.argv.slice(1);
Promise.all(JSON.parse(list).map(async (r) => {
  const res = await fetch(base + r.path, { method: r.method ?? 'GET', headers: r.headers ?? {}, body: r.body });
  const text = await res.text();
  let body; try { body = JSON.parse(text); } catch { body = { raw: text }; }
  return { status: res.status, body };
})).then((replies) => process.stdout.write(JSON.stringify(replies)), (error) => { process.stderr.write(String(error)); process.exit(1); });
`;

/** A command that edits /etc/passwd or /etc/group, tried again while another process (another test run) holds its lock. */
async function account(command: string, args: string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return void (await run(command, args));
    } catch (error) {
      if (attempt === 10 || !/lock/i.test(String((error as { stderr?: string }).stderr))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

const useradd = (name: string): Promise<void> => account(USERADD as string, ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name]);

/** A throwaway group of `members` (other users made here); its gid and how to remove it. */
export async function addGroup(members: OtherUser[]): Promise<{ name: string; gid: number; remove(): Promise<void> }> {
  const name = `nptestg${randomBytes(4).toString('hex')}`;
  await account('groupadd', ['--system', name]);
  for (const member of members) await account('usermod', ['-a', '-G', name, member.name]);
  const gid = Number((await run('getent', ['group', name])).stdout.split(':')[2]);
  return { name, gid, remove: async () => void (await run('groupdel', [name]).catch(() => undefined)) };
}

/**
 * Adds a system user with no home and no shell, and checks that it can run
 * this node and reach loopback. Remove it after (afterAll), even when a test failed.
 */
export async function addOtherUser(): Promise<OtherUser> {
  if (otherUserUnavailable !== undefined) throw new Error(otherUserUnavailable);
  const name = `nptest${randomBytes(4).toString('hex')}`;
  await useradd(name);
  const remove = async (): Promise<void> => void (await run(USERDEL as string, [name]).catch(() => undefined));
  try {
    const uid = Number((await run('id', ['-u', name])).stdout.trim());
    const asUser = async (args: string[]): Promise<string> => (await run(RUNUSER as string, ['-u', name, '--', process.execPath, ...args], { cwd: '/', env: { PATH: process.env.PATH } })).stdout;
    const seen = Number(await asUser(['-e', 'process.stdout.write(String(process.getuid()))']));
    if (seen !== uid) throw new Error(`node ran as uid ${seen}, not ${name}'s ${uid}`);
    return {
      name,
      uid,
      fetch: async (base, requests) => JSON.parse(await asUser(['-e', SCRIPT, base, JSON.stringify(requests)])) as AsReply[],
      node: (args, env = {}, input) => runCommand(RUNUSER as string, ['-u', name, '--', process.execPath, ...args], { env: { PATH: process.env.PATH, ...env }, cwd: '/', ...(input === undefined ? {} : { input }) }),
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}
