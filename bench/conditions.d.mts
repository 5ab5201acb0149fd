// Types of conditions.mjs for the TypeScript that uses it (test/e2e/real-node/latency.test.ts).
export function conditions(): { line: string; after: () => string };
export function median(xs: number[]): number;
export function quantile(xs: number[], q: number): number;
export function verdict(ok: boolean): string;
export function processCpuSeconds(pid: number): number;
