/**
 * Who is being waited for: the transport tells an observer (the CLI's
 * spinner and warnings) about each call to the service, a node or a work
 * server, each attempt and each retry. Nothing is told when no one observes.
 */
export interface CallWait {
  /** "the service", "the node", "the work server". */
  party: string;
  /** The call, redacted: "GET http://…/wallet/balance/nano_…". */
  where: string;
  attempts: number;
  /** Attempt `n` (1-based) starts. */
  attempt(n: number): void;
  /** Attempt `n` failed (`reason`); attempt n + 1 follows in `inMs`. */
  retrying(n: number, reason: string, inMs: number): void;
  /** The call is over (answered or failed). */
  end(): void;
}

export type WaitObserver = (call: { party: string; where: string; attempts: number }) => Omit<CallWait, 'party' | 'where' | 'attempts'>;

let observer: WaitObserver | undefined;

export function observeWaits(next: WaitObserver | undefined): void {
  observer = next;
}

const quiet = { attempt: () => undefined, retrying: () => undefined, end: () => undefined };

export function waitFor(call: { party: string; where: string; attempts: number }): Omit<CallWait, 'party' | 'where' | 'attempts'> {
  return observer === undefined ? quiet : observer(call);
}
