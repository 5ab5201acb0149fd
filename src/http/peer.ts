import { readFile } from 'node:fs/promises';
import { connect, createServer, isIPv4, isIPv6, type AddressInfo, type Socket } from 'node:net';
import { endianness } from 'node:os';
import { join } from 'node:path';

/**
 * Who is at the other end of a loopback TCP connection, on Linux: the kernel's
 * socket tables (`/proc/net/tcp`, `/proc/net/tcp6`) list every socket of the
 * network namespace with the uid that made it. The client's own socket is the
 * row whose local address is the client's and whose remote address is ours.
 */

/** Where the kernel's socket tables are; NANOPAY_SOCKET_TABLES names another directory (a test makes the check unavailable with it). */
export function socketTablesDir(env: NodeJS.ProcessEnv): string {
  return env.NANOPAY_SOCKET_TABLES || '/proc/net';
}

/**
 * True when this system can tell which user a loopback connection comes
 * from: asked about a connection of this process, the tables name our uid.
 * Some systems have the files but leave them empty (WSL 1, some sandboxes).
 */
export async function peerCheckAvailable(tables: string): Promise<boolean> {
  const uid = process.geteuid?.();
  if (process.platform !== 'linux' || uid === undefined) return false;
  return (await ownConnectionUid(tables).catch(() => undefined)) === uid;
}

/** Connects to ourselves on 127.0.0.1 and looks the connection up. */
async function ownConnectionUid(tables: string): Promise<number | undefined> {
  const server = createServer();
  const sockets: Socket[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    sockets.push(client);
    await new Promise<void>((resolve, reject) => {
      client.once('connect', resolve);
      client.once('error', reject);
    });
    const ours = await accepted;
    sockets.push(ours);
    return await peerUid(tables, { address: ours.remoteAddress ?? '', port: ours.remotePort ?? 0 }, { address: ours.localAddress ?? '', port: ours.localPort ?? 0 });
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export interface Endpoint {
  address: string;
  port: number;
}

/** The columns of a row (after `sl`): local address, remote address, state, queues, timers, retransmits, uid. */
const LOCAL = 1;
const REMOTE = 2;
const STATE = 3;
const UID = 7;
/** A socket in TIME_WAIT is no longer anyone's: the kernel shows its uid as 0. */
const TIME_WAIT = '06';

/**
 * The kernel prints an address as its 32-bit words, each read in the host's
 * byte order, then the port in hex: `0100007F:1F90` is 127.0.0.1:8080 on a
 * little-endian machine. IPv4-mapped IPv6 addresses come back as IPv4.
 */
function parseEndpoint(text: string): Endpoint | undefined {
  const match = /^([0-9A-F]{8}|[0-9A-F]{32}):([0-9A-F]{4})$/i.exec(text);
  if (match === null) return undefined;
  const hex = match[1] as string;
  const bytes = Buffer.alloc(hex.length / 2);
  for (let word = 0; word < hex.length / 8; word++) {
    const value = Number.parseInt(hex.slice(word * 8, word * 8 + 8), 16);
    if (endianness() === 'LE') bytes.writeUInt32LE(value, word * 4);
    else bytes.writeUInt32BE(value, word * 4);
  }
  const port = Number.parseInt(match[2] as string, 16);
  const mapped = bytes.length === 16 && bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (bytes.length === 4 || mapped) return { address: [...bytes.subarray(-4)].join('.'), port };
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16));
  return { address: canonical(groups.join(':')), port };
}

/** One spelling per address: IPv4-mapped IPv6 as IPv4, IPv6 as Node's URL parser writes it. */
function canonical(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1] as string;
  if (isIPv6(address)) return new URL(`http://[${address}]`).hostname.slice(1, -1);
  return address;
}

/**
 * The uid of the socket whose local end is `client` and whose remote end is
 * `server`, read from one socket table's text; undefined when no live socket
 * matches (or two disagree).
 */
function uidInTable(table: string, client: Endpoint, server: Endpoint): number | undefined {
  const want = (e: Endpoint | undefined, of: Endpoint): boolean => e !== undefined && e.port === of.port && e.address === canonical(of.address);
  const uids = new Set<number>();
  for (const line of table.split('\n').slice(1)) {
    const columns = line.trim().split(/\s+/);
    if (columns.length <= UID || columns[STATE] === TIME_WAIT) continue;
    if (!want(parseEndpoint(columns[LOCAL] as string), client) || !want(parseEndpoint(columns[REMOTE] as string), server)) continue;
    const uid = Number(columns[UID]);
    if (Number.isSafeInteger(uid)) uids.add(uid);
  }
  return uids.size === 1 ? [...uids][0] : undefined;
}

/**
 * The uid of the process at the other end of a connection to us, or undefined
 * when it cannot be found (not a loopback peer, the socket gone, the tables
 * unreadable): the caller refuses such a connection.
 */
export async function peerUid(tables: string, client: Endpoint, server: Endpoint): Promise<number | undefined> {
  if (!isLoopbackAddress(client.address)) return undefined;
  // An IPv4 connection's client is an IPv4 socket (in `tcp`) or an IPv6 one with mapped addresses (in `tcp6`).
  const files = isIPv4(canonical(client.address)) ? ['tcp', 'tcp6'] : ['tcp6'];
  for (const file of files) {
    const text = await readFile(join(tables, file), 'utf8').catch(() => undefined);
    const uid = text === undefined ? undefined : uidInTable(text, client, server);
    if (uid !== undefined) return uid;
  }
  return undefined;
}

function isLoopbackAddress(address: string): boolean {
  const plain = canonical(address);
  return /^127\.\d+\.\d+\.\d+$/.test(plain) || plain === '::1';
}
