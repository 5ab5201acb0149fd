import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicOnly } from '../../../src/x402/local-hosts.js';

// Issue 41, point 2: http_fetch_paid's "public hosts only" judges the address it connects to.
let server: Server;
let port: number;
let served = 0;

beforeAll(async () => {
  server = createServer((_req, res) => {
    served++;
    res.end('a loopback service');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** A resolver for names of the test: what a rebinding name's DNS answers, one answer per lookup (the last one repeats). */
function resolver(...answers: string[][]) {
  const asked: string[] = [];
  const lookup = (hostname: string, options: { all?: boolean }, callback: (error: Error | null, addresses: { address: string; family: number }[]) => void) => {
    asked.push(hostname);
    const answer = (answers[Math.min(asked.length - 1, answers.length - 1)] as string[]).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    expect(options.all).toBe(true);
    callback(null, answer);
  };
  return { asked, lookup: lookup as never };
}

describe('publicOnly: the transport of a paid fetch a model asked for', () => {
  it('refuses a name that answers a loopback address to the connection itself, reaching nothing', async () => {
    const rebinding = resolver(['127.0.0.1']);
    const transport = publicOnly(undefined, rebinding.lookup);
    await expect(transport(`http://rebind.test:${port}/`, {})).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/on this machine or a private network/), hint: expect.stringContaining(`NANOPAY_FETCH_ALLOW_HOSTS=rebind.test:${port}`) });
    // The lookup judged is the connection's: one lookup, no second resolution to connect with.
    expect(rebinding.asked).toEqual(['rebind.test']);
    expect(served).toBe(0);
  });

  it('refuses a name whose answers mix a public and a private address', async () => {
    const mixed = resolver(['93.184.216.34', '10.1.2.3']);
    await expect(publicOnly(undefined, mixed.lookup)(`http://mixed.test:${port}/`, {})).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    expect(served).toBe(0);
  });

  it('refuses loopback and private IP literals in every spelling, and localhost, without a lookup', async () => {
    const none = resolver([]);
    for (const host of ['127.0.0.1', '127.1', '[::1]', '[::ffff:127.0.0.1]', '10.0.0.1', 'localhost', '0x7f000001']) {
      await expect(publicOnly(undefined, none.lookup)(`http://${host}:${port}/`, {})).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    }
    expect(none.asked).toEqual([]);
    expect(served).toBe(0);
  });

  it('reaches a host NANOPAY_FETCH_ALLOW_HOSTS names', async () => {
    const response = await publicOnly(`127.0.0.1:${port}`)(`http://127.0.0.1:${port}/`, {});
    expect(await response.text()).toBe('a loopback service');
    expect(served).toBe(1);
  });
});
