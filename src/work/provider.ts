import { NanoPayError } from '../errors.js';
import { generateWork } from './generator.js';
import { remoteWork, type WorkServer } from './remote.js';

export type WorkMode = 'auto' | 'cpu' | 'remote';
export type Provide = (root: string, threshold: string, signal?: AbortSignal) => Promise<string>;

export interface ProviderSettings {
  mode: WorkMode;
  servers: string[];
  /** Tried after the configured servers (the node of a node backend). */
  extra?: WorkServer;
  timeoutMs: number;
  /** Follows local searches, e.g. for a spinner. */
  observer?: WorkObserver;
  /** The native kernel measured fastest here for a search on so many threads (kernel-choice.ts). */
  kernel?: (threads: number) => string | undefined;
  onServerFailure?: (server: string, reason: string) => void;
}

export interface WorkObserver {
  /** A local search begins (before its first progress report, which comes after a quarter second). */
  start(threshold: string): void;
  progress(hashes: number, threshold: string): void;
  done(): void;
}

/** Settings from NANO_WORK_MODE, NANO_WORK_SERVER_URL (comma-separated) and NANO_WORK_TIMEOUT_MS, over the profile's. */
export function providerSettings(env: NodeJS.ProcessEnv, profile: { workMode?: WorkMode; workServers?: string }): ProviderSettings {
  const mode = (env.NANO_WORK_MODE || profile.workMode || 'auto').toLowerCase();
  if (mode !== 'auto' && mode !== 'cpu' && mode !== 'remote') {
    throw new NanoPayError('USAGE', `NANO_WORK_MODE must be auto, cpu or remote, not "${mode}"`);
  }
  const servers = (env.NANO_WORK_SERVER_URL || profile.workServers || '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const timeout = Number(env.NANO_WORK_TIMEOUT_MS);
  return { mode, servers, timeoutMs: Number.isInteger(timeout) && timeout > 0 ? timeout : 10_000 };
}

/**
 * cpu: this machine. remote: the servers in order, WORK_SERVER_ERROR if all fail.
 * auto: the servers in order, then this machine at once when none answered in time.
 */
export function workProvider(settings: ProviderSettings): Provide {
  const { observer } = settings;
  const local: Provide = (root, threshold, signal) => {
    observer?.start(threshold);
    return generateWork(root, threshold, {
      ...(signal === undefined ? {} : { signal }),
      ...(settings.kernel === undefined ? {} : { kernel: settings.kernel }),
      ...(observer === undefined ? {} : { onProgress: (hashes: number) => observer.progress(hashes, threshold) }),
    }).finally(() => observer?.done());
  };
  const servers = [...settings.servers, ...(settings.extra === undefined ? [] : [settings.extra])];
  if (settings.mode === 'cpu' || (settings.mode === 'auto' && servers.length === 0)) return local;
  const remote: Provide = (root, threshold, signal) =>
    remoteWork(servers, root, threshold, {
      timeoutMs: settings.timeoutMs,
      ...(signal === undefined ? {} : { signal }),
      ...(settings.onServerFailure === undefined ? {} : { onFailure: settings.onServerFailure }),
    });
  if (settings.mode === 'remote') return remote;
  return async (root, threshold, signal) => {
    try {
      return await remote(root, threshold, signal);
    } catch (error) {
      if (error instanceof NanoPayError && error.code === 'CANCELLED') throw error;
      return local(root, threshold, signal);
    }
  };
}
