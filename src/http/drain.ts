import { ExitCode } from '../errors.js';
import type { ServerLog } from './log.js';

/** Past the drain's bound, this long is left for closing the store; then the process ends whatever holds it. */
const OVERRUN_MS = 5_000;

export interface DrainOptions {
  log: ServerLog;
  /** The bound of the drain (--drain-timeout): answers, deliveries and streams in flight get this long. */
  boundMs: number;
  /**
   * Stops the server's work, each part within `boundMs`: stop taking connections, let what is in
   * flight finish or put it back (the outbox), close the store.
   */
  drain(): Promise<void>;
}

/**
 * Runs a server until SIGTERM or SIGINT, then drains it and resolves (the
 * command then ends with exit 0). A second signal during the drain ends the
 * process at once with exit 130: what was in flight is cut (a webhook delivery
 * goes again once its lease runs out, at least once as ever).
 */
export function serveUntilSignal(options: DrainOptions): Promise<void> {
  const { log } = options;
  return new Promise((resolve, reject) => {
    let draining: Promise<void> | undefined;
    let drained = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (draining !== undefined) {
        log(`${signal} again: stopping now, without waiting for the drain`, { event: 'stopped', level: 'warn', fields: { signal, drained: false } });
        process.exit(ExitCode.INTERRUPTED);
      }
      log(`${signal}: draining (at most ${options.boundMs} ms); a second signal stops at once`, { event: 'draining', fields: { signal, bound_ms: options.boundMs } });
      // Lasting, unref'd: it never keeps the process alive, and ends one that something else holds after the drain.
      setTimeout(() => {
        log(drained ? 'stopped; something still held the process' : 'the drain overran its bound; stopping now', { event: 'stopped', level: drained ? 'warn' : 'error', fields: { drained } });
        process.exit(drained ? ExitCode.OK : ExitCode.GENERAL);
      }, options.boundMs + OVERRUN_MS).unref();
      draining = options.drain().then(
        () => {
          drained = true;
          log('drained; stopped', { event: 'stopped', fields: { drained: true } });
          resolve();
        },
        (error: unknown) => reject(error),
      );
    };
    // Lasting listeners: the second signal must reach this handler, not end the process by default.
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
