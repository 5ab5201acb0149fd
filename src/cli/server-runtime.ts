import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { Flags } from '@oclif/core';
import { observeWaits } from '../ops/observe.js';
import { NanoPayError, notWritable } from '../errors.js';
import { ensurePrivateDir } from '../fs/secure-fs.js';
import { serveUntilSignal } from '../http/drain.js';
import { Readiness, type ReadinessCheck } from '../http/health.js';
import { serverLog, type LogFormat, type ServerLog } from '../http/log.js';
import { Metrics } from '../http/metrics.js';
import { startProbeServer, type Probes } from '../http/probes.js';
import type { HttpServer } from '../http/server.js';
import { pingBackend } from '../ops/ledger/backend-ping.js';
import type { Session } from '../ops/session.js';
import type { Store } from '../store/store.js';
import { timedStore } from '../store/timed.js';
import { leaveSignalsToServer } from './interrupt.js';
import { listenAddress } from './listen-address.js';

/** The flags of every long-running command: how it logs and how long a stop may take. */
export const runFlags = {
  'log-format': Flags.string({ description: 'log lines on stderr: text, or json (one object a line: time, level, event, request_id…)', options: ['text', 'json'], default: 'text' }),
  'drain-timeout': Flags.integer({
    description: 'seconds a stop (SIGTERM, Ctrl-C) lets requests and webhook deliveries in flight finish; a second signal stops at once',
    default: 10,
    min: 0,
  }),
};

/** …and of every server: where the probes answer without a token. */
export const serverFlags = {
  ...runFlags,
  'metrics-listen': Flags.string({ description: 'HOST:PORT answering /metrics, /healthz and /readyz without a token (keep it private: loopback or an internal network)' }),
};

interface RunFlags {
  'log-format': string;
  'drain-timeout': number;
  'metrics-listen'?: string;
}

/**
 * A long-running command's log, metrics, readiness and stop: it logs as
 * --log-format says, answers its probes (and on --metrics-listen), and on
 * SIGTERM or Ctrl-C drains within --drain-timeout and ends with exit 0.
 */
export class ServerRuntime {
  readonly log: ServerLog;
  readonly metrics = new Metrics();
  /** The drain's bound, in milliseconds. */
  readonly drainMs: number;
  private readonly probeAddress: { host?: string; port?: number };
  private readiness: Readiness | undefined;
  private probeServer: HttpServer | undefined;

  /** `silent`: no log at all (sandbox --quiet). */
  constructor(flags: RunFlags, options: { silent?: boolean } = {}) {
    this.log = options.silent === true ? () => undefined : serverLog(flags['log-format'] as LogFormat, (text) => void process.stderr.write(text));
    this.drainMs = flags['drain-timeout'] * 1000;
    this.probeAddress = listenAddress(flags['metrics-listen'], '--metrics-listen');
    leaveSignalsToServer();
    // A retry of the backend is one more line of this log (in its format), not a warning of the CLI's.
    observeWaits(({ party, where, attempts }) => ({
      attempt: () => undefined,
      retrying: (n, reason, inMs) =>
        this.log(`${party} did not answer ${where} (${reason}); attempt ${n + 1} of ${attempts} in ${Math.max(1, Math.round(inMs / 1000))} s`, {
          event: 'backend_retry',
          level: 'warn',
          fields: { party, attempt: n + 1, attempts },
        }),
      end: () => undefined,
    }));
  }


  /** The store, each call timed into nanopay_store_operation_seconds. */
  timed(store: Store): Store {
    const seconds = this.metrics.histogram('nanopay_store_operation_seconds', 'Time of each store call, by table and method');
    return timedStore(store, (op, value) => seconds.observe(value, { op }));
  }

  /**
   * Starts the server `start` makes with its probes (ready when every check passes), after the probes' own
   * server (--metrics-listen), which is closed again when `start` fails: a failed start leaves nothing
   * listening. `shown`: what the --json document adds (the probes' URL).
   */
  async start<T>(checks: readonly ReadinessCheck[], start: (probes: Probes) => Promise<T>): Promise<{ server: T; shown: { metrics_url?: string } }> {
    this.readiness = new Readiness(checks);
    const probes: Probes = { readiness: this.readiness, metrics: this.metrics };
    const { host, port } = this.probeAddress;
    if (host !== undefined && port !== undefined) {
      this.probeServer = await startProbeServer({ host, port, probes, log: this.log, closeGraceMs: this.drainMs });
      this.log(`probes on ${this.probeServer.url} (/metrics, /healthz, /readyz)`, { event: 'probes_listening', fields: { url: this.probeServer.url } });
    }
    try {
      return { server: await start(probes), shown: this.probeServer === undefined ? {} : { metrics_url: this.probeServer.url } };
    } catch (error) {
      await this.probeServer?.close();
      throw error;
    }
  }

  /** Runs until SIGTERM or Ctrl-C, then: not ready, `stop` (each part within the bound), the probes' server last. */
  async untilStopped(stop: () => Promise<void>): Promise<void> {
    await serveUntilSignal({
      log: this.log,
      boundMs: this.drainMs,
      drain: async () => {
        this.readiness?.drain();
        await stop();
        await this.probeServer?.close();
      },
    });
  }
}

/** Readiness: the store answers a read. */
export const storeCheck = (store: Store): ReadinessCheck => ({ name: 'store', check: () => store.ping() });

/** Readiness: the backend answers a call that costs nothing. */
export const backendCheck = (session: Session): ReadinessCheck => ({ name: 'backend', check: () => pingBackend(session) });

/** Readiness of a shop: the profile has the wallet its requests are made for (without it every order would fail). */
export const shopWalletCheck = (session: Session): ReadinessCheck => ({ name: 'wallet', check: async () => void (await session.address()) });

/** Runs `fn` with the session a wallet server acts with (the agent's strict mode makes one per call). */
type SessionUse = <T>(fn: (session: Session) => Promise<T>) => Promise<T>;

/** Readiness of a server that acts for a wallet (serve, agent): its key store is there, and its backend answers. */
export function walletChecks(use: SessionUse): ReadinessCheck[] {
  return [
    {
      name: 'wallet',
      check: () =>
        use(async (session) => {
          if (!(await session.hasKeystore()) && session.profile().sessionSocket === undefined) throw new NanoPayError('NOT_FOUND', 'The key store is gone');
        }),
    },
    { name: 'backend', check: () => use((session) => pingBackend(session)) },
  ];
}

/** Readiness: a dir the server writes its records to is there and writable. */
export function writableDirCheck(name: string, dir: string): ReadinessCheck {
  return {
    name,
    check: async () => {
      await ensurePrivateDir(dir);
      await access(dir, constants.W_OK).catch((error: NodeJS.ErrnoException) => {
        throw error.code === 'EROFS' || error.code === 'EACCES' ? notWritable(dir, error.code === 'EROFS', error) : new NanoPayError('NOT_WRITABLE', `${dir} cannot be used (${error.code ?? 'error'})`);
      });
    },
  };
}
