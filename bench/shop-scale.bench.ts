// npm run bench:shop-scale — checkout serve --fresh-addresses on the reference nano_node (V27.1, dev network; NANO_NODE_BIN)
// with OPEN requests open (BENCH_OPEN, default 10,000 and 100,000; written to the store directly, as creating them
// through the API would take long), the server itself the real `checkout serve` process at its defaults (--poll-interval
// 10, the node's WebSocket): RPC calls it makes at rest (counted by a proxy in front of the node) per minute and per
// round, its CPU at rest (/proc of its pid) over BENCH_REST_S seconds, and for BENCH_PAYMENTS payments made to open
// requests, one every 200 ms, the time from each payment's confirmation (the bench's own WebSocket subscription) and
// from its send to the moment the server recorded the request paid (its paid_at; one machine, one clock): p50, p99;
// then, the WebSocket cut for BENCH_DOWN_S seconds, the calls of the full rounds it makes every poll interval meanwhile.
// A benchmark, not a test: it prints figures.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import WebSocket from 'ws';
import type { ShopRequest } from '../src/store/shop.js';
import { DEV_GENESIS, nodeUser, realNodeUnavailable, startRealNode } from '../test/helpers/ledger/real-node.js';
import { openFreshRequests } from '../test/helpers/ledger/shop-requests.js';
import { startFaultyProxy } from '../test/helpers/network/faulty-proxy.js';
import { until } from '../test/helpers/network/webhook-receiver.js';
import { startWsProxy } from '../test/helpers/network/ws-proxy.js';
import { startShopServe } from '../test/helpers/processes/shop-serve.js';
import { conditions, median, processCpuSeconds, quantile, verdict } from './conditions.mjs';

const SIZES = (process.env.BENCH_OPEN ?? '10000,100000').split(',').map(Number);
const REST_S = Number(process.env.BENCH_REST_S ?? 120);
const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 100);
const DOWN_S = Number(process.env.BENCH_DOWN_S ?? 30);
const PRICE = 10n ** 27n;
const GOALS = { cpuPercent: 5, paidP99Ms: 1000 };

type Call = { action?: string; accounts?: unknown[] };

/** The server's confirmations-to-paid figures for `payments` made to `requests`. */
async function pay(rpcUrl: string, wsUrl: string, walletId: string, requests: ShopRequest[], api: <T>(path: string) => Promise<T>): Promise<{ fromConfirmed: number[]; fromSent: number[] }> {
  const confirmedAt = new Map<string, number>();
  const socket = new WebSocket(wsUrl);
  socket.on('message', (raw) => {
    const m = JSON.parse(raw.toString()) as { topic?: string; message?: { block?: { link_as_account?: string } } };
    const to = m.message?.block?.link_as_account;
    if (m.topic === 'confirmation' && to !== undefined && !confirmedAt.has(to)) confirmedAt.set(to, Date.now());
  });
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ action: 'subscribe', topic: 'confirmation', ack: true, options: { accounts: requests.map((r) => r.receive_address) } }));
  await new Promise((resolve) => socket.once('message', resolve));
  const sentAt = new Map<string, number>();
  for (const request of requests) {
    sentAt.set(request.receive_address, Date.now());
    const body = { action: 'send', wallet: walletId, source: DEV_GENESIS.address, destination: request.receive_address, amount: request.amount_raw };
    await fetch(rpcUrl, { method: 'POST', body: JSON.stringify(body) });
    await sleep(200);
  }
  const paidAt = new Map<string, number>();
  await until(
    async () => {
      for (const request of requests.filter((r) => !paidAt.has(r.receive_address))) {
        const now = await api<ShopRequest>(`/api/v1/requests/${request.id}`);
        if (now.paid_at !== undefined) paidAt.set(request.receive_address, Date.parse(now.paid_at));
      }
      return paidAt.size === requests.length;
    },
    'every payment recorded paid',
    120_000,
  );
  socket.terminate();
  const since = (from: Map<string, number>): number[] => requests.map((r) => (paidAt.get(r.receive_address) as number) - (from.get(r.receive_address) as number));
  return { fromConfirmed: since(confirmedAt), fromSent: since(sentAt) };
}

describe.skipIf(realNodeUnavailable() !== undefined)('bench: the shop with many open requests on the real node', () => {
  it('prints RPC calls at rest, CPU at rest and payment → paid', async () => {
    const machine = conditions();
    console.log(`checkout serve --fresh-addresses on nano_node V27.1 (dev network, epoch 2), open requests: ${SIZES.join(', ')}; rest ${REST_S} s; ${PAYMENTS} payments`);
    console.log(machine.line);
    const rows: string[] = [];
    for (const open of SIZES) {
      const node = await startRealNode({ upgraded: true });
      const calls: { at: number; call: Call }[] = [];
      const rpc = await startFaultyProxy(node.rpcUrl, (_method, _path, body) => (calls.push({ at: performance.now(), call: body }), 'pass'));
      const ws = await startWsProxy(node.wsUrl);
      try {
        const { user, session } = await nodeUser(node, { NANOPAY_NODE_URL: rpc.url, NANOPAY_NODE_WS_URL: ws.url });
        const filling = performance.now();
        const requests = await openFreshRequests(await session.dataStore(), open, { amountRaw: PRICE });
        console.log(`\n${open} open requests written in ${((performance.now() - filling) / 1000).toFixed(0)} s`);
        const started = performance.now();
        const shop = await startShopServe(['--fresh-addresses'], user.env);
        try {
          const pid = shop.server.child.pid as number;
          // Ready: the whole filter acknowledged (the server then runs a full round), and that round done.
          const followed = (): number =>
            ws.sent.reduce((n, m) => n + ((m.options as { accounts?: unknown[]; accounts_add?: unknown[] } | undefined)?.accounts?.length ?? 0) + ((m.options as { accounts_add?: unknown[] } | undefined)?.accounts_add?.length ?? 0), 0);
          await until(() => followed() >= open, 'the whole filter sent', 600_000);
          console.log(`the whole filter sent ${((performance.now() - started) / 1000).toFixed(1)} s after the start; then 15 s to settle`);
          await sleep(15_000);

          const restFrom = calls.length;
          const cpuFrom = processCpuSeconds(pid);
          const restStart = performance.now();
          await sleep(REST_S * 1000);
          const restMs = performance.now() - restStart;
          const cpu = ((processCpuSeconds(pid) - cpuFrom) / (restMs / 1000)) * 100;
          const atRest = calls.slice(restFrom).map((c) => c.call);
          const fullRounds = atRest.filter((c) => c.action === 'accounts_frontiers' && Array.isArray(c.accounts) && c.accounts.length > 0).length;
          const perMinute = (atRest.length / restMs) * 60_000;
          const bound = open / 500 + 10;
          const batches = Math.ceil(open / 2000);
          const perFull = fullRounds === 0 ? 0 : atRest.length / (fullRounds / batches);
          const singles = atRest.filter((c) => !String(c.action).startsWith('accounts_')).length;
          const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
          console.log(`at rest: ${atRest.length} RPC calls in ${(restMs / 1000).toFixed(0)} s = ${perMinute.toFixed(1)}/min; ${fullRounds / batches} full rounds, ${perFull.toFixed(0)} calls each (bound ${bound}), ${singles} single-account calls; server CPU ${cpu.toFixed(2)}% of a core, RSS ${rss.toFixed(0)} MB`);

          const paid = requests.slice(0, PAYMENTS);
          const payFrom = calls.length;
          const figures = await pay(node.rpcUrl, node.wsUrl, node.walletId, paid, shop.api);
          const p = (xs: number[], q: number): string => `${quantile(xs, q).toFixed(0)} ms`;
          console.log(
            `payment → paid (${PAYMENTS}, one every 200 ms): from confirmation p50 ${p(figures.fromConfirmed, 0.5)}, p99 ${p(figures.fromConfirmed, 0.99)}, max ${Math.max(...figures.fromConfirmed)} ms; from send p50 ${p(figures.fromSent, 0.5)}, p99 ${p(figures.fromSent, 0.99)}; ${calls.length - payFrom} RPC calls meanwhile`,
          );
          // The WebSocket cut (and refused): every round is a full one, every --poll-interval.
          ws.refuse(true);
          ws.drop();
          await until(() => shop.server.stderr().includes('closed'), 'the server to see the WebSocket lost');
          const downFrom = calls.length;
          const downCpu = processCpuSeconds(pid);
          const downStart = performance.now();
          await sleep(DOWN_S * 1000);
          const downMs = performance.now() - downStart;
          const down = calls.slice(downFrom).map((c) => c.call);
          const downRounds = down.filter((c) => c.action === 'accounts_frontiers').length / batches;
          console.log(
            `WebSocket down: ${down.length} RPC calls in ${(downMs / 1000).toFixed(0)} s = ${((down.length / downMs) * 60_000).toFixed(1)}/min, ${downRounds} full rounds, ${(down.length / downRounds).toFixed(0)} calls each (bound ${bound}); server CPU ${(((processCpuSeconds(pid) - downCpu) / (downMs / 1000)) * 100).toFixed(2)}% of a core`,
          );
          rows.push(
            `| ${open} | ${perMinute.toFixed(1)} | ${perFull.toFixed(0)} (≤ ${bound}: ${verdict(perFull <= bound)}) | ${cpu.toFixed(2)}% (${verdict(cpu < GOALS.cpuPercent)}) | ${median(figures.fromConfirmed).toFixed(0)} / ${quantile(figures.fromConfirmed, 0.99).toFixed(0)} ms (${verdict(quantile(figures.fromConfirmed, 0.99) < GOALS.paidP99Ms)}) |`,
          );
        } finally {
          await shop.stop();
        }
      } finally {
        await ws.close();
        await rpc.close();
        await node.stop();
      }
    }
    console.log('\n| open requests | RPC calls/min at rest | calls per full round | server CPU at rest | confirmation → paid p50 / p99 |');
    console.log('|---|---|---|---|---|');
    for (const row of rows) console.log(row);
    console.log(`Goals: calls per round ≤ open/500 + 10, CPU at rest < ${GOALS.cpuPercent}% of a core, payment → paid p99 < ${GOALS.paidP99Ms} ms`);
    console.log(machine.after());
  });
});
