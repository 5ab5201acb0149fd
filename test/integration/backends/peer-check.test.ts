import { rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { peerCheckAvailable, peerUid } from '../../../src/http/peer.js';
import { startHttpServer, type HttpServer } from '../../../src/http/server.js';
import { expectEnvelopeError, httpCall, rawHttp, type RawReply } from '../../helpers/network/raw-http.js';
import { tempDir } from '../../helpers/processes/temp.js';

// Who is at the other end of a loopback connection, read from the kernel's socket tables (Linux), on real
// sockets; and the JSON server's `onlyUser` option built on it. A second real user is in test/e2e/wallet/local-users.test.ts.

const TABLES = '/proc/net';
const me = process.geteuid?.() ?? -1;
const linux = process.platform === 'linux';

const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A TCP server on `host`; resolves with the server's end of the first connection and the client's socket. */
async function connection(host: string, clientOptions: { host: string; localAddress?: string }): Promise<{ server: Socket; client: Socket }> {
  const listener: Server = createServer();
  await new Promise<void>((resolve) => listener.listen(0, host, resolve));
  closers.push(() => new Promise((resolve) => listener.close(resolve)));
  const accepted = new Promise<Socket>((resolve) => listener.once('connection', resolve));
  const client = connect({ ...clientOptions, port: (listener.address() as AddressInfo).port });
  closers.push(() => client.destroy());
  await new Promise<void>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  const server = await accepted;
  closers.push(() => server.destroy());
  return { server, client };
}

const ends = (server: Socket) =>
  [
    { address: server.remoteAddress as string, port: server.remotePort as number },
    { address: server.localAddress as string, port: server.localPort as number },
  ] as const;

describe.skipIf(!linux)('the peer of a loopback connection, from /proc/net/tcp and tcp6', () => {
  it('is this process\'s uid for an IPv4 client, an IPv6 client, and an IPv6 socket speaking IPv4 (its row is in tcp6, mapped)', async () => {
    const v4 = await connection('127.0.0.1', { host: '127.0.0.1' });
    expect(await peerUid(TABLES, ...ends(v4.server))).toBe(me);
    const v6 = await connection('::1', { host: '::1' });
    expect(await peerUid(TABLES, ...ends(v6.server))).toBe(me);
    // The server sees 127.0.0.1; the client's own row reads ::ffff:127.0.0.1 in tcp6.
    const mapped = await connection('127.0.0.1', { host: '::ffff:127.0.0.1' });
    expect(mapped.server.remoteAddress).toBe('127.0.0.1');
    expect(await peerUid(TABLES, ...ends(mapped.server))).toBe(me);
    // Any address of 127/8 is loopback, as the source of a connection too.
    const other = await connection('127.0.0.1', { host: '127.0.0.1', localAddress: '127.0.0.2' });
    expect(other.server.remoteAddress).toBe('127.0.0.2');
    expect(await peerUid(TABLES, ...ends(other.server))).toBe(me);
  });

  it('is unknown for a client gone to TIME_WAIT (the kernel shows uid 0 there), for ends that do not match, and without tables', async () => {
    const { server, client } = await connection('127.0.0.1', { host: '127.0.0.1' });
    const [clientEnd, serverEnd] = ends(server);
    // The client closes first, so its socket waits in TIME_WAIT once both ends are closed.
    const closed = Promise.all([new Promise((resolve) => client.once('close', resolve)), new Promise((resolve) => server.once('close', resolve))]);
    server.once('end', () => server.end());
    client.end();
    await closed;
    expect(await peerUid(TABLES, clientEnd, serverEnd)).toBeUndefined();

    const live = await connection('127.0.0.1', { host: '127.0.0.1' });
    const [liveClient, liveServer] = ends(live.server);
    expect(await peerUid(TABLES, liveClient, { ...liveServer, port: liveServer.port === 1 ? 2 : 1 })).toBeUndefined();
    expect(await peerUid(TABLES, { ...liveClient, address: '10.0.0.1' }, liveServer)).toBeUndefined();
    expect(await peerUid('/nonexistent-socket-tables', liveClient, liveServer)).toBeUndefined();
  });

  it('is available where the tables name this process for a connection of its own; not where they are missing or empty', async () => {
    expect(await peerCheckAvailable(TABLES)).toBe(true);
    expect(await peerCheckAvailable('/nonexistent-socket-tables')).toBe(false);
    // Tables that exist but list nothing (as on some systems): the check would refuse everyone, so it is not offered.
    const empty = await tempDir('nanopay-tables-');
    closers.push(() => rm(empty, { recursive: true, force: true }));
    const header = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
    await writeFile(join(empty, 'tcp'), header);
    await writeFile(join(empty, 'tcp6'), header);
    expect(await peerCheckAvailable(empty)).toBe(false);
  });
});

describe.skipIf(!linux)('a JSON server with onlyUser', () => {
  async function serverFor(uid: number, socketTables = TABLES): Promise<{ server: HttpServer; log: string[]; upgrades: number[] }> {
    const log: string[] = [];
    const upgrades: number[] = [];
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      routes: [{ method: 'GET', path: '/who', handle: () => ({ ok: true }) }],
      onlyUser: { uid, socketTables },
      log: (line) => log.push(line),
      upgrade: (_req, socket) => {
        upgrades.push(1);
        socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n');
      },
    });
    closers.push(() => server.close());
    return { server, log, upgrades };
  }

  /** Two requests on one kept-alive connection. */
  async function twoOnOneConnection(url: string): Promise<RawReply[]> {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    closers.push(() => agent.destroy());
    const one = (): Promise<RawReply> =>
      new Promise((resolve, reject) => {
        request(`${url}/who`, { agent }, (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: JSON.parse(text) }));
        })
          .on('error', reject)
          .end();
      });
    return [await one(), await one()];
  }

  it('answers its own user', async () => {
    const { server, log } = await serverFor(me);
    expect((await httpCall(server.url, 'GET', '/who')).body).toMatchObject({ success: true, data: { ok: true } });
    expect(log.filter((l) => l.includes('refused'))).toEqual([]);
  });

  it('refuses another user\'s connection with 403 FORBIDDEN on every request and upgrade, looked up and logged once per connection', async () => {
    // A server that belongs to uid 4242 sees this process as another user.
    const { server, log, upgrades } = await serverFor(4242);
    const replies = await twoOnOneConnection(server.url);
    for (const reply of replies) {
      expectEnvelopeError(reply, 403, 'FORBIDDEN');
      expect(reply.body.error?.message).toContain(`another user (uid ${me})`);
    }
    expect(log.filter((l) => /refused the connection from 127\.0\.0\.1:\d+: another user/.test(l))).toHaveLength(1);
    const upgrade = await rawHttp(server.url, 'GET', '/who', { upgrade: 'test', connection: 'upgrade' });
    expectEnvelopeError(upgrade, 403, 'FORBIDDEN');
    expect(upgrades).toEqual([]);
    expect(log.filter((l) => l.includes('refused the connection'))).toHaveLength(2);
  });

  it('refuses a connection whose user cannot be found, rather than trusting it', async () => {
    const { server } = await serverFor(me, '/nonexistent-socket-tables');
    const reply = await httpCall(server.url, 'GET', '/who');
    expectEnvelopeError(reply, 403, 'FORBIDDEN');
    expect(reply.body.error?.message).toContain('cannot be found');
  });
});
