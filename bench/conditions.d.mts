// Types of conditions.mjs, for the benches written in TypeScript (run by vitest: bench/vitest.config.ts).
export function conditions(): { line: string; after: () => string };
export function median(xs: number[]): number;
export function quantile(xs: number[], q: number): number;
export function verdict(ok: boolean): string;
export function processCpuSeconds(pid: number): number;
