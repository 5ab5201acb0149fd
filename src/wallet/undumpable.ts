import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { NanoPayError } from '../errors.js';

/**
 * Closes this process to the user's other processes (no ptrace, no
 * /proc/PID/mem): what a process holding unlocked keys does, as ssh-agent
 * does, so an agent running as the same user cannot read them out of its
 * memory. Through the native addon (prctl PR_SET_DUMPABLE 0); false where it
 * is missing (built without a C compiler) or the system has no such call.
 */
export function undumpable(): boolean {
  try {
    const addon = createRequire(import.meta.url)('../../build/Release/nanopay_pow.node') as { undumpable?: () => boolean };
    return addon.undumpable?.() === true;
  } catch {
    return false;
  }
}

/** The process tracing `pid` (a debugger, strace), 0 when none; undefined where /proc does not say. */
export function tracerOf(pid: number | 'self' = 'self'): number | undefined {
  try {
    const match = /^TracerPid:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/**
 * Before this process reads a secret (the key store password, what it
 * opens): closed to the user's other processes, and refused if one already
 * traces it, attached before it was closed, which would read whatever comes.
 */
export function guardMemory(): void {
  undumpable();
  const tracer = tracerOf();
  if (tracer !== undefined && tracer !== 0) {
    throw new NanoPayError('UNSAFE_PROCESS', `Another process (pid ${tracer}) traces this one (a debugger, strace): nanopay reads no key store password under it; nothing was read`, {
      hint: 'Run the command without the tracer.',
    });
  }
}
