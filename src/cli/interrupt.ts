import { NanoPayError } from '../errors.js';
import { endSpinners } from './output/spinner.js';

/** How long a command has, after Ctrl-C, to stop by itself (workers end, the journal is written) before it is ended. */
const GRACE_MS = 1500;

let controller: AbortController | undefined;
let finished = false;
/** A server drains on SIGINT by itself (http/drain.ts): Ctrl-C neither aborts its work nor ends it after the grace. */
let drainedByServer = false;
let report: (error: NanoPayError) => void = () => undefined;

/**
 * One process-wide Ctrl-C signal. Ctrl-C aborts it, so work and waits stop at
 * once and the command ends with CANCELLED (exit 130); whatever does not stop
 * within the grace time (a request in flight, a stuck library) is ended then,
 * with the same exit code, so Ctrl-C always ends a command.
 */
export function interruption(onForcedEnd?: (error: NanoPayError) => void): AbortSignal {
  if (onForcedEnd !== undefined) report = onForcedEnd;
  if (controller === undefined) {
    const own = new AbortController();
    // A lasting listener (not `once`): a second Ctrl-C while the command winds down must reach this
    // handler again rather than kill the process before it ends cleanly.
    process.on('SIGINT', () => {
      if (drainedByServer || own.signal.aborted) return;
      own.abort();
      setTimeout(() => {
        endSpinners();
        if (!finished) report(new NanoPayError('CANCELLED', 'Interrupted'));
        process.exit(130);
      }, GRACE_MS).unref();
    });
    controller = own;
  }
  return controller.signal;
}

/** The command is a server that drains on SIGINT and SIGTERM itself. */
export function leaveSignalsToServer(): void {
  drainedByServer = true;
}

/** The command has printed its result or error: a forced end after this prints nothing more. */
export function commandFinished(): void {
  finished = true;
}
