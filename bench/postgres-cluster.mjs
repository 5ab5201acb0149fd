// A private PostgreSQL cluster for the benches (as test/helpers/ledger/postgres.ts starts one for the tests):
// Debian's binaries, as the postgres user when run as root, in `dir`, on a free loopback port.
import { execFile } from 'node:child_process';
import { chownSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** A private PostgreSQL cluster (as in test/helpers/ledger/postgres.ts), or undefined with the reason printed. */
export async function startCluster(dir) {
  const root = '/usr/lib/postgresql';
  const version = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => b - a)[0] : undefined;
  if (version === undefined) return { skipped: 'no PostgreSQL binaries (apt-get install postgresql)' };
  const bin = join(root, version, 'bin');
  const asRoot = process.getuid() === 0;
  if (asRoot) {
    const [, , uid, gid] = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:')).split(':');
    chownSync(dir, Number(uid), Number(gid));
  }
  const as = (program, args) => (asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args]) : run(join(bin, program), args));
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  const data = join(dir, 'data');
  await as('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  // Durable as a real server is (fsync on): the figures are for a store that keeps what it commits.
  await as('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start']);
  let made = 0;
  return {
    database: async () => {
      const name = `bench_${++made}`;
      const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
      await client.connect();
      await client.query(`CREATE DATABASE ${name}`);
      await client.end();
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    stop: async () => {
      const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGINT');
      while ((() => { try { process.kill(pid, 0); return true; } catch { return false; } })()) await sleep(20);
    },
  };
}

