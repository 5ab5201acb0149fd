import { describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { Readiness, notReady } from '../../../src/http/health.js';

/** A check the test answers: counts its calls, and settles when told (or at once, once `answering`). */
function heldCheck(name: string) {
  const held = { answering: false, calls: [] as { resolve: () => void }[] };
  return Object.assign(held, {
    check: {
      name,
      check: () =>
        new Promise<void>((resolve) => {
          held.calls.push({ resolve });
          if (held.answering) resolve();
        }),
    },
  });
}

describe('readiness', () => {
  it('asks each dependency once however many ask at once, and reuses the answer', async () => {
    const backend = heldCheck('backend');
    const readiness = new Readiness([backend.check], { cacheMs: 60_000 });
    const asked = Array.from({ length: 50 }, () => readiness.state());
    await new Promise((r) => setImmediate(r));
    expect(backend.calls).toHaveLength(1);
    backend.calls[0]?.resolve();
    for (const state of await Promise.all(asked)) expect(state).toEqual({ ready: true, checks: { backend: 'ok' } });
    expect(await readiness.state()).toEqual({ ready: true, checks: { backend: 'ok' } });
    expect(backend.calls).toHaveLength(1);
  });

  it('a dependency that does not answer within the bound is not ready, and is not asked again while the first call runs', async () => {
    const backend = heldCheck('backend');
    const readiness = new Readiness([backend.check, { name: 'store', check: async () => undefined }], { timeoutMs: 20, cacheMs: 0 });
    expect(await readiness.state()).toEqual({ ready: false, checks: { backend: 'no answer within 20 ms', store: 'ok' } });
    expect(await readiness.state()).toEqual({ ready: false, checks: { backend: 'no answer within 20 ms', store: 'ok' } });
    expect(backend.calls).toHaveLength(1);
    backend.calls[0]?.resolve();
    await new Promise((r) => setImmediate(r));
    backend.answering = true;
    expect(await readiness.state()).toEqual({ ready: true, checks: { backend: 'ok', store: 'ok' } });
    expect(backend.calls).toHaveLength(2);
  });

  it('says why, without a URL (credentials) or the text of an unexpected error', async () => {
    const readiness = new Readiness([
      { name: 'backend', check: () => Promise.reject(new NanoPayError('REQUEST_ERROR', 'The node at https://user:hunter2@rpc.example/x?key=abc did not answer')) },
      { name: 'store', check: () => Promise.reject(new Error('password authentication failed for user "shop" (hunter2)')) },
    ]);
    const state = await readiness.state();
    expect(state).toEqual({ ready: false, checks: { backend: 'REQUEST_ERROR: The node at <url> did not answer', store: 'failed (unexpected error)' } });
    const failure = notReady(state);
    expect(failure).toMatchObject({ code: 'NOT_READY', status: 503 });
    expect(failure.message).toBe('Not ready: backend: REQUEST_ERROR: The node at <url> did not answer; store: failed (unexpected error)');
    expect(failure.message).not.toContain('hunter2');
  });

  it('is not ready once draining, without asking anything', async () => {
    const backend = heldCheck('backend');
    const readiness = new Readiness([backend.check]);
    readiness.drain();
    expect(await readiness.state()).toEqual({ ready: false, checks: { server: 'draining' } });
    expect(backend.calls).toHaveLength(0);
  });
});
