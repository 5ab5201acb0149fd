import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import { request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { startConnectProxy, type TestProxy } from '../../helpers/network/connect-proxy.js';
import { newUser, type CliUser } from '../../helpers/processes/cli.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';

// The service, the node's RPC and WebSocket and the work servers are reached through HTTPS_PROXY /
// HTTP_PROXY as curl, npm and gh reach them, past NO_PROXY and loopback. "sandbox.test" resolves only
// inside the proxy (to the sandbox on loopback), so a command that reaches it went through the proxy.

const SECRET = 's3cret-proxy-pass';
let sb: RunningSandbox;
let front: Server;
let frontPort: number;
let proxy: TestProxy;
let dir: string;
let ca: string;
let sbPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nanopay-proxy-'));
  // A certificate for sandbox.test, trusted by the CLI through NODE_EXTRA_CA_CERTS.
  ca = join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', ca, '-days', '2', '-subj', '/CN=sandbox.test', '-addext', 'subjectAltName=DNS:sandbox.test'], { stdio: 'ignore' });
  sb = await sandbox();
  sbPort = new URL(sb.url).port as unknown as number;
  // The sandbox behind TLS, as a real service is.
  front = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(ca) }, (req, res) => {
    const upstream = request(new URL(req.url ?? '/', sb.url), { method: req.method, headers: req.headers }, (answer: IncomingMessage) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((done) => front.listen(0, '127.0.0.1', done));
  frontPort = (front.address() as AddressInfo).port;
  proxy = await startConnectProxy({ credentials: `user:${SECRET}`, hosts: { 'sandbox.test': '127.0.0.1' } });
});

afterAll(async () => {
  await proxy?.close();
  front?.closeAllConnections();
  await new Promise((done) => front?.close(done));
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

const withProxy = (user: CliUser, extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ ...user.env, NODE_EXTRA_CA_CERTS: ca, ...extra });
const proxyUrl = (credentials = `user:${SECRET}`): string => `http://${credentials}@127.0.0.1:${proxy.port}`;

describe('proxies', () => {
  it('reaches an https service through HTTPS_PROXY with a CONNECT tunnel, sending the credentials and never showing them', async () => {
    const user = await newUser(`https://sandbox.test:${frontPort}`);
    const before = proxy.connects.length;
    const env = withProxy(user, { HTTPS_PROXY: proxyUrl() });
    const created = await user.run(['wallet', 'create', '--remote', '--json'], { env });
    expect(created.code, created.stderr).toBe(0);
    const address = (JSON.parse(created.stdout) as { address: string }).address;
    await fund(sb.url, address, '1');
    const balance = await user.run(['balance', '--receive'], { env });
    expect(balance.code, balance.stderr).toBe(0);
    expect(balance.stdout).toMatch(/1 XNO/);
    const tunnels = proxy.connects.slice(before);
    expect(tunnels.length).toBeGreaterThanOrEqual(2);
    expect(new Set(tunnels)).toEqual(new Set([`sandbox.test:${frontPort}`]));
    for (const out of [created.stdout, created.stderr, balance.stdout, balance.stderr]) expect(out).not.toContain(SECRET);
    // The lower-case variable, as curl reads it.
    const lower = await user.json(['balance'], { env: withProxy(user, { https_proxy: proxyUrl() }) });
    expect(lower._code).toBe(0);
    expect(proxy.connects.length).toBeGreaterThan(before + tunnels.length);
  });

  it('says the proxy refused (407) without showing its credentials: PROXY_AUTH_REQUIRED, exit 6', async () => {
    const user = await newUser(`https://sandbox.test:${frontPort}`);
    const refusedBefore = proxy.refused;
    const failed = await user.json<{ error: { code: string; message: string } }>(['wallet', 'create', '--remote'], { env: withProxy(user, { HTTPS_PROXY: proxyUrl('user:wrong-pass') }) });
    expect(failed._code).toBe(6);
    expect(failed.error.code).toBe('PROXY_AUTH_REQUIRED');
    expect(failed.error.message).toContain(`the proxy http://***@127.0.0.1:${proxy.port} refused to connect to sandbox.test:${frontPort}: 407`);
    expect(JSON.stringify(failed)).not.toContain('wrong-pass');
    expect(proxy.refused).toBeGreaterThan(refusedBefore);
  });

  it('an http service behind a plain-HTTP proxy that wants other credentials (407) is PROXY_AUTH_REQUIRED (exit 6), not a bug', async () => {
    const user = await newUser(`http://sandbox.test:${sbPort}`);
    const refusedBefore = proxy.refused;
    for (const credentials of ['user:wrong-pass', undefined]) {
      const env = withProxy(user, { HTTP_PROXY: credentials === undefined ? `http://127.0.0.1:${proxy.port}` : proxyUrl(credentials) });
      const failed = await user.json<{ error: { code: string; message: string; hint: string } }>(['wallet', 'create', '--remote'], { env });
      expect(failed._code).toBe(6);
      expect(failed.error).toMatchObject({ code: 'PROXY_AUTH_REQUIRED', hint: expect.stringContaining('HTTP_PROXY') });
      expect(failed.error.message).toContain(`the proxy ${credentials === undefined ? '' : '***@'}127.0.0.1:${proxy.port}`.replace('the proxy ', 'the proxy http://'));
      expect(JSON.stringify(failed)).not.toContain('wrong-pass');
      const human = await user.run(['wallet', 'create', '--remote'], { env });
      expect(human.code).toBe(6);
      expect(human.stderr).toMatch(/Error \[PROXY_AUTH_REQUIRED\][\s\S]*Hint:/);
    }
    expect(proxy.refused).toBeGreaterThan(refusedBefore);
  });

  it('sends an http service request in absolute form through HTTP_PROXY', async () => {
    const user = await newUser(`http://sandbox.test:${sbPort}`);
    const before = proxy.forwards.length;
    const created = await user.json<{ address: string }>(['wallet', 'create', '--remote'], { env: withProxy(user, { HTTP_PROXY: proxyUrl() }) });
    expect(created._code).toBe(0);
    expect(proxy.forwards.slice(before)).toContain(`POST http://sandbox.test:${sbPort}/wallet/create`);
  });

  it('goes direct for NO_PROXY hosts and for loopback, whatever the proxy variables say', async () => {
    const named = await newUser(`https://sandbox.test:${frontPort}`);
    const before = { connects: proxy.connects.length, forwards: proxy.forwards.length };
    // sandbox.test resolves only inside the proxy: reached directly, it is not found.
    const direct = await named.json<{ error: { message: string } }>(['wallet', 'create', '--remote'], { env: withProxy(named, { HTTPS_PROXY: proxyUrl(), NO_PROXY: 'example.com, .sandbox.test' }) });
    expect(direct._code).toBe(5);
    expect(direct.error.message).toMatch(/ENOTFOUND|EAI_AGAIN/);
    const loopback = await newUser(sb.url);
    const all = { HTTPS_PROXY: proxyUrl(), HTTP_PROXY: proxyUrl(), ALL_PROXY: proxyUrl() };
    const created = await loopback.json(['wallet', 'create', '--remote'], { env: withProxy(loopback, all) });
    expect(created._code).toBe(0);
    expect(proxy.connects.length).toBe(before.connects);
    expect(proxy.forwards.length).toBe(before.forwards);
  });

  it('reaches the node RPC, the node WebSocket (CONNECT) and a work server through the proxy', async () => {
    const user = await newUser(sb.url);
    const node = `http://sandbox.test:${sbPort}`;
    const env = withProxy(user, {
      HTTP_PROXY: proxyUrl(),
      NANOPAY_BACKEND: 'node',
      NANOPAY_NODE_URL: node,
      NANOPAY_NODE_WS_URL: `ws://sandbox.test:${sbPort}`,
      NANO_WORK_MODE: 'remote',
      NANO_WORK_SERVER_URL: node,
    });
    const created = await user.json<{ address: string }>(['wallet', 'create'], { env });
    expect(created._code).toBe(0);
    await fund(sb.url, created.address, '1');
    const before = { connects: proxy.connects.length, forwards: proxy.forwards.length };
    const watched = await user.run(['receive', '--watch', '--timeout', '3', '--json'], { env });
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toContain('"received"');
    // The WebSocket through a tunnel; the RPC calls, and the open block's work_generate, in absolute form.
    expect(proxy.connects.slice(before.connects)).toContain(`sandbox.test:${sbPort}`);
    expect(proxy.forwards.slice(before.forwards).filter((f) => f === `POST ${node}/`).length).toBeGreaterThan(2);
    expect(watched.stderr + watched.stdout).not.toContain(SECRET);
  });

  it('config list shows the proxies in effect with their credentials masked', async () => {
    const user = await newUser(sb.url);
    const env = { HTTPS_PROXY: proxyUrl(), http_proxy: 'proxy.example:3128', NO_PROXY: '.internal,10.0.0.0/8' };
    const listed = await user.json<{ proxies: Record<string, string | null> }>(['config', 'list'], { env });
    expect(listed.proxies).toEqual({ https_proxy: `http://***@127.0.0.1:${proxy.port}`, http_proxy: 'http://proxy.example:3128', all_proxy: null, no_proxy: '.internal,10.0.0.0/8' });
    const human = await user.run(['config', 'list'], { env });
    expect(human.stdout).toContain(`Proxy: HTTPS_PROXY=http://***@127.0.0.1:${proxy.port}, HTTP_PROXY=http://proxy.example:3128, NO_PROXY=.internal,10.0.0.0/8`);
    for (const out of [JSON.stringify(listed), human.stdout, human.stderr]) expect(out).not.toContain(SECRET);
  });
});
