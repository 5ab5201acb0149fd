import type { LanesResult } from '../../ops/lanes/lanes.js';
import { table } from './format.js';

/** The lanes as a table, and what they are kept funded with. */
export function lanesTable(result: LanesResult): string {
  if (result.count === 0) return `Wallet "${result.wallet}" has no payment lanes: x402 payments go one at a time. Add some: nanopay lanes set 8 --fund 0.5`;
  const rows = result.lanes.map((l) => [String(l.lane), l.address, `${l.balance} XNO`, l.receivable_raw === '0' ? '' : `+${l.receivable}`, l.outstanding === null ? '' : `cheque ${l.outstanding.hash.slice(0, 8)}…`, l.held_by === null ? '' : `pid ${l.held_by.pid}`]);
  return `${table([['LANE', 'ADDRESS', 'BALANCE', 'COMING', 'OUTSTANDING', 'HELD BY'], ...rows])}\nEach lane is kept funded with ${result.fund} XNO from ${result.from}.`;
}
