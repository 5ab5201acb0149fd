import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_THRESHOLDS, generateWork, providerSettings, shutdownWorkers, validateWork, workProvider } from '../../../src/work/index.js';

const root = '718CC2121C3E641059BC1C2CFC45666C99E8AE922F7A807B7D07B62C995D79E2';
const threshold = DEV_THRESHOLDS.send;
const servers: Server[] = [];
const calls: Record<string, number> = {};

/** A work server speaking work_generate that answers well, wrongly, or never. */
async function workServer(kind: 'good' | 'wrong' | 'hang'): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', async () => {
      calls[kind] = (calls[kind] ?? 0) + 1;
      const { action, hash, difficulty } = JSON.parse(body) as { action: string; hash: string; difficulty: string };
      expect(action).toBe('work_generate');
      if (kind === 'hang') return;
      const work = kind === 'good' ? await generateWork(hash, difficulty, { workers: 1 }) : '0000000000000000';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ work, difficulty, multiplier: '1' }));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let good: string;
let wrong: string;
let hang: string;

beforeAll(async () => {
  [good, wrong, hang] = await Promise.all([workServer('good'), workServer('wrong'), workServer('hang')]);
});

afterAll(async () => {
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  await shutdownWorkers();
});

describe('work providers', () => {
  it('reads NANO_WORK_MODE and a comma-separated NANO_WORK_SERVER_URL', () => {
    expect(providerSettings({ NANO_WORK_MODE: 'remote', NANO_WORK_SERVER_URL: `${good}, ${wrong}` }, {})).toMatchObject({ mode: 'remote', servers: [good, wrong] });
    expect(providerSettings({}, {})).toMatchObject({ mode: 'auto', servers: [] });
    expect(() => providerSettings({ NANO_WORK_MODE: 'gpu' }, {})).toThrow(expect.objectContaining({ code: 'USAGE' }));
  });

  it('remote: uses a server\'s valid work, skipping one whose nonce does not meet the threshold', async () => {
    const before = calls.good ?? 0;
    const provide = workProvider({ mode: 'remote', servers: [wrong, good], timeoutMs: 5000 });
    const work = await provide(root, threshold);
    expect(validateWork(root, work, threshold)).toBe(true);
    expect(calls.good).toBe(before + 1);
  });

  it('remote: WORK_SERVER_ERROR when every server fails; a hung one times out', async () => {
    const failures: string[] = [];
    const provide = workProvider({ mode: 'remote', servers: [wrong, hang], timeoutMs: 300, onServerFailure: (s, reason) => failures.push(`${s} ${reason}`) });
    await expect(provide(root, threshold)).rejects.toMatchObject({ code: 'WORK_SERVER_ERROR' });
    expect(failures[0]).toMatch(/does not meet/);
    expect(failures[1]).toMatch(/no answer in 300 ms/);
  });

  it('auto: a wrong nonce or a hung server hands over to this machine', async () => {
    for (const server of [wrong, hang]) {
      const work = await workProvider({ mode: 'auto', servers: [server], timeoutMs: 300 })(root, threshold);
      expect(validateWork(root, work, threshold)).toBe(true);
    }
  });

  it('cpu: never asks a server', async () => {
    const before = { ...calls };
    const work = await workProvider({ mode: 'cpu', servers: [good], timeoutMs: 300 })(root, threshold);
    expect(validateWork(root, work, threshold)).toBe(true);
    expect(calls).toEqual(before);
  });
});
