/** Small renderers for human output; `--json` bypasses them. */

export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

/** Where a setting's value in effect comes from, for people. */
export function describeSource(s: { source: 'env' | 'profile' | 'default'; variable?: string }): string {
  return s.source === 'env' ? `from ${s.variable ?? 'the environment'}` : s.source === 'profile' ? 'from the profile' : 'default';
}

/** A price in another currency, where its XNO amount comes from and until when it holds: "19.99 EUR (at 0.93 EUR per XNO, https://… at 2026-…Z), held until 2026-…Z". */
export function priceLine(fiat: { currency: string; amount: string; rate: string; rate_source: string; rate_time: string; quote_expires_at?: string }): string {
  const holds = fiat.quote_expires_at === undefined ? '' : `, held until ${fiat.quote_expires_at}`;
  return `${fiat.amount} ${fiat.currency} (at ${fiat.rate} ${fiat.currency} per XNO, ${fiat.rate_source} at ${fiat.rate_time})${holds}`;
}
