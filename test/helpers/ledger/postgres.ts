import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../network/free-port.js';

const run = promisify(execFile);

/**
 * A private PostgreSQL cluster for tests: Debian's initdb and pg_ctl (run as
 * the `postgres` user when we are root), its own data directory and socket in a
 * temporary directory, its own port on 127.0.0.1, stopped by its PID.
 */
export interface PostgresCluster {
  port: number;
  /** A new, empty database; its URL (without the password, when the cluster has one). */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (fast shutdown: connections are ended) and starts it again on the same port and data. */
  restart(pauseMs?: number): Promise<void>;
  stop(): Promise<void>;
}

interface Binaries {
  bin: string;
  /** The command prefix that runs a program as the cluster's owner. */
  as: string[];
  owner?: { uid: number; gid: number };
}

function binaries(): Binaries | string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a)) : [];
  if (versions.length === 0) return `no PostgreSQL server binaries in ${root} (apt-get install postgresql)`;
  const bin = join(root, versions[0] as string, 'bin');
  if (process.getuid?.() !== 0) return { bin, as: [] };
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((line) => line.startsWith('postgres:'));
  if (entry === undefined) return 'running as root, and there is no postgres user to run the server as';
  const [, , uid, gid] = entry.split(':');
  return { bin, as: ['runuser', '-u', 'postgres', '--'], owner: { uid: Number(uid), gid: Number(gid) } };
}

/**
 * Why PostgreSQL tests cannot run here, or undefined when they can. In CI
 * (CI=true) they must run: a missing PostgreSQL fails there instead.
 */
export function postgresUnavailable(): string | undefined {
  const found = binaries();
  if (typeof found !== 'string') return undefined;
  if (process.env.CI === 'true') throw new Error(`PostgreSQL is required in CI: ${found}`);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `password`: connections over TCP must give it (scram-sha-256), as on a real server; without it
 * they are trusted. The socket in the temporary dir stays trusted either way.
 */
export async function startPostgres(options: { password?: string } = {}): Promise<PostgresCluster> {
  const found = binaries();
  if (typeof found === 'string') throw new Error(found);
  const dir = await mkdtemp(join(tmpdir(), 'nanopay-pg-'));
  if (found.owner !== undefined) await chown(dir, found.owner.uid, found.owner.gid);
  const data = join(dir, 'data');
  const as = (program: string, args: string[]) => run(found.as[0] ?? join(found.bin, program), found.as.length > 0 ? [...found.as.slice(1), join(found.bin, program), ...args] : args);
  const port = await freePort();
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const start = () => as('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', serverOptions, 'start']);
  const stopServer = async () => {
    const pidFile = join(data, 'postmaster.pid');
    if (!existsSync(pidFile)) return;
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    // SIGINT: PostgreSQL's fast shutdown (ends the sessions, then stops).
    process.kill(pid, 'SIGINT');
    while (alive(pid)) await sleep(20);
  };
  try {
    const auth = options.password === undefined ? ['-A', 'trust'] : ['--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${join(dir, 'password')}`];
    if (options.password !== undefined) {
      await writeFile(join(dir, 'password'), `${options.password}\n`);
      if (found.owner !== undefined) await chown(join(dir, 'password'), found.owner.uid, found.owner.gid);
    }
    await as('initdb', ['-D', data, '-U', 'postgres', ...auth, '-E', 'UTF8', '--no-sync', '--no-instructions']);
    await start();
  } catch (error) {
    await stopServer().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const url = (db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  return {
    port,
    async createDatabase(name) {
      const admin = options.password === undefined ? url('postgres') : url('postgres').replace('postgres@', `postgres:${encodeURIComponent(options.password)}@`);
      const client = new pg.Client({ connectionString: admin });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    async restart(pauseMs = 0) {
      await stopServer();
      await sleep(pauseMs);
      await start();
    },
    async stop() {
      await stopServer();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
