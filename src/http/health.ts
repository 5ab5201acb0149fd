import { NanoPayError } from '../errors.js';

/** One thing a server needs to do its work (its store, its backend). */
export interface ReadinessCheck {
  /** Shown in the answer: store, backend, wallet… */
  name: string;
  /** Resolves when the dependency answers; throws why not. */
  check(): Promise<unknown>;
}

export interface ReadinessState {
  ready: boolean;
  /** Per check: "ok", or why not (no URL, no secret). */
  checks: Record<string, string>;
}

export interface ReadinessOptions {
  /** How long a check may take before it counts as failed. Default 2 s. */
  timeoutMs?: number;
  /** How long an answer is reused: checks run at most once in this long, however often /readyz is asked. Default 5 s. */
  cacheMs?: number;
}

/** Anything that looks like a URL (it may carry a user and password): never shown. */
const URL_LIKE = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;

/** Why a check failed, as /readyz may show it to anyone: the error's code and message without URLs, bounded. */
function reason(error: unknown): string {
  if (!(error instanceof NanoPayError)) return 'failed (unexpected error)';
  const text = `${error.code}: ${error.message.replace(URL_LIKE, '<url>')}`;
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Whether a server can do its work: every check passes within the bound. The
 * answer is cached and shared, and a check still running is never started
 * again, so /readyz can neither flood a backend nor spend its credits. Once
 * draining, it is not ready, without asking anything.
 */
export class Readiness {
  private last: { at: number; state: Promise<ReadinessState> } | undefined;
  private readonly running = new Map<string, Promise<unknown>>();
  private draining = false;

  constructor(
    private readonly checks: readonly ReadinessCheck[],
    private readonly options: ReadinessOptions = {},
  ) {}

  /** From now on not ready: the server stops taking work. */
  drain(): void {
    this.draining = true;
  }

  state(): Promise<ReadinessState> {
    if (this.draining) return Promise.resolve({ ready: false, checks: { server: 'draining' } });
    const now = Date.now();
    if (this.last === undefined || now - this.last.at >= (this.options.cacheMs ?? 5_000)) {
      this.last = { at: now, state: this.evaluate() };
    }
    return this.last.state;
  }

  private async evaluate(): Promise<ReadinessState> {
    const results = await Promise.all(this.checks.map(async (check) => [check.name, await this.run(check)] as const));
    return { ready: results.every(([, result]) => result === 'ok'), checks: Object.fromEntries(results) };
  }

  private async run(check: ReadinessCheck): Promise<string> {
    let running = this.running.get(check.name);
    if (running === undefined) {
      running = Promise.resolve()
        .then(() => check.check())
        .finally(() => this.running.delete(check.name));
      this.running.set(check.name, running);
    }
    const timeoutMs = this.options.timeoutMs ?? 2_000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      // Never what keeps a stopping process alive.
      timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs).unref();
    });
    try {
      return await Promise.race([running.then(() => 'ok', reason), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Why a server is not ready, in one line: each failing check and its reason. */
export function notReady(state: ReadinessState): NanoPayError {
  const failing = Object.entries(state.checks).filter(([, result]) => result !== 'ok');
  return new NanoPayError('NOT_READY', `Not ready: ${failing.map(([name, result]) => `${name}: ${result}`).join('; ')}`);
}
