import { performance } from 'node:perf_hooks';
import type { Store } from './store.js';

/**
 * The store with each call of its tables (and its ping) timed: `observe` gets
 * "table.method" and the seconds it took, failed or not. Everything else
 * (exclusive sections, subscriptions, close) passes as it is: their time is
 * not the store's.
 */
export function timedStore(store: Store, observe: (op: string, seconds: number) => void): Store {
  const timed = <F extends (...args: never[]) => unknown>(op: string, fn: F, self: unknown): F =>
    ((...args: Parameters<F>) => {
      const started = performance.now();
      const done = (): void => observe(op, (performance.now() - started) / 1000);
      const result = fn.apply(self, args);
      if (result instanceof Promise) return result.finally(done);
      done();
      return result;
    }) as F;
  const tables = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === 'ping' && typeof value === 'function') return timed('ping', value as () => Promise<void>, target);
      if (typeof value === 'function') return (value as (...args: unknown[]) => unknown).bind(target);
      if (typeof value !== 'object' || value === null) return value;
      let table = tables.get(key);
      if (table === undefined) {
        table = new Proxy(value, {
          get(inner, method) {
            const member: unknown = Reflect.get(inner, method, inner);
            return typeof member === 'function' ? timed(`${String(key)}.${String(method)}`, member as (...args: unknown[]) => unknown, inner) : member;
          },
        });
        tables.set(key, table);
      }
      return table;
    },
  });
}
