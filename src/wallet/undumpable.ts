import { createRequire } from 'node:module';

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
