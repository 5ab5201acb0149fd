import { describe, expect, it } from 'vitest';
import { requestIdOf } from '../../../src/http/log.js';

describe('request ids', () => {
  it('made ones are 16 random hex digits, all different across refills of their pool of random bytes', () => {
    const ids = Array.from({ length: 2000 }, () => requestIdOf({}));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a client's well-formed id is kept, a hostile one replaced", () => {
    expect(requestIdOf({ 'x-request-id': 'shop-7f3a.42' })).toBe('shop-7f3a.42');
    expect(requestIdOf({ 'x-request-id': 'a\nb' })).toMatch(/^[0-9a-f]{16}$/);
  });
});
