// What a bench's figures depend on, printed with them: the Node.js version, the CPU, the load average before and after.
// And the helpers every bench uses to run its measure several times and report the median.
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/** The machine and the load before the runs; `after()` the line to print at the end. */
export function conditions() {
  const before = load();
  const cpu = cpus();
  const line = `Node.js ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, load average (1, 5, 15 min) before: ${before}`;
  return { line, after: () => `load average after: ${load()}` };
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** A quantile of a list (nearest rank). */
export const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};

/** "met" or "MISSED", for a goal line. */
export const verdict = (ok) => (ok ? 'met' : 'MISSED');

/** The sum and count of each series of a Prometheus histogram, by the value of `label`, from a /metrics text. */
export function histogramSums(text, name, label) {
  const out = new Map();
  const re = new RegExp(`^${name}_(sum|count)\\{[^}]*${label}="([^"]+)"[^}]*\\} (\\S+)$`, 'gm');
  for (const [, kind, key, value] of text.matchAll(re)) {
    const row = out.get(key) ?? { sum: 0, count: 0 };
    row[kind] = Number(value);
    out.set(key, row);
  }
  return out;
}

/** CPU seconds (user + system) a process of this machine has used so far, from /proc (in clock ticks of 1/100 s, Linux's). */
export function processCpuSeconds(pid) {
  const fields = readStat(pid);
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / 100;
}

function readStat(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which is in parentheses and may hold spaces): state is field 3, utime 14, stime 15.
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/** Runs `run` `times` times, one after another, printing `describe(result, number)` after each; resolves to the results. */
export async function repeated(times, run, describe) {
  const results = [];
  for (let i = 0; i < times; i++) {
    const result = await run();
    results.push(result);
    console.log(describe(result, i + 1));
  }
  return results;
}

/** An x402 bench's latency table over its runs (each with `unpaid` and `paid` {median, p99}): medians of the runs. */
export function latencyTable(runs, paidName) {
  const m = (pick) => median(runs.map(pick));
  const f = (x) => `${x.toFixed(1)} ms`;
  console.log(`\nMedian of ${runs.length} runs:`);
  console.log('| request | median | p99 |');
  console.log('|---|---|---|');
  console.log(`| unpaid (free route, proxied) | ${f(m((r) => r.unpaid.median))} | ${f(m((r) => r.unpaid.p99))} |`);
  console.log(`| ${paidName} | ${f(m((r) => r.paid.median))} | ${f(m((r) => r.paid.p99))} |`);
  console.log(`| paid − unpaid | ${f(m((r) => r.paid.median - r.unpaid.median))} | ${f(m((r) => r.paid.p99 - r.unpaid.p99))} |`);
}
