import { rawToXno } from '../nano/index.js';

/** An amount for a message about money: XNO for people, raw for exactness ("1.25 XNO (1250… raw)"). */
export function xnoAndRaw(raw: bigint): string {
  return `${rawToXno(raw)} XNO (${raw} raw)`;
}
