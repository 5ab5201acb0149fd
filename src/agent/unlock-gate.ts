import { NanoPayError } from '../errors.js';

/**
 * Bounds the strict agent's key store unlocks: each is scrypt at N = 2^17
 * (128 MiB and about half a second of CPU), so a burst of requests must not
 * run them all at once. At most `running` unlock at a time and `waiting` more
 * wait their turn; beyond that a request is refused at once (AGENT_BUSY, 503).
 */
export class UnlockGate {
  private active = 0;
  private readonly line: (() => void)[] = [];

  constructor(
    private readonly running = 2,
    private readonly waiting = 8,
  ) {}

  async run<T>(unlock: () => Promise<T>): Promise<T> {
    if (this.active < this.running) this.active++;
    else if (this.line.length < this.waiting) await new Promise<void>((resolve) => this.line.push(resolve));
    else {
      throw new NanoPayError('AGENT_BUSY', `The agent is already unlocking its wallet for ${this.running + this.waiting} requests; try again in a moment`);
    }
    try {
      return await unlock();
    } finally {
      // The slot goes straight to the next in line, so a newcomer cannot overtake it.
      const next = this.line.shift();
      if (next === undefined) this.active--;
      else next();
    }
  }
}
