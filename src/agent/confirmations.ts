import { randomBytes } from 'node:crypto';
import type { ToolInput } from '../toolset/tools.js';
import { SPEND_WINDOW_MS, SpendWindow } from './spend-window.js';

/** A tool call held back until a second request returns its token. */
export interface HeldCall {
  name: string;
  arguments: ToolInput;
}

interface Entry extends HeldCall {
  expiresAt: number;
}

/**
 * What --confirm-above keeps: confirmation tokens, random, single-use, bound
 * to one exact tool call (the call is kept here, so a token can only ever
 * carry out that call), and expiring; and the window of the chat's recent
 * spends made without one, which decides what needs one.
 */
export class Confirmations {
  private readonly held = new Map<string, Entry>();
  readonly spends: SpendWindow;

  constructor(
    private readonly ttlMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {
    this.spends = new SpendWindow(SPEND_WINDOW_MS, now);
  }

  issue(call: HeldCall): { token: string; expiresInS: number } {
    this.sweep();
    const token = randomBytes(18).toString('base64url');
    this.held.set(token, { name: call.name, arguments: { ...call.arguments }, expiresAt: this.now() + this.ttlMs });
    return { token, expiresInS: Math.round(this.ttlMs / 1000) };
  }

  /** The call behind a token, once; undefined when the token is unknown, used or expired. */
  take(token: string): HeldCall | undefined {
    const entry = this.held.get(token);
    this.held.delete(token);
    if (entry === undefined || entry.expiresAt <= this.now()) return undefined;
    return { name: entry.name, arguments: entry.arguments };
  }

  /** Drops expired tokens, so unconfirmed calls do not pile up. */
  private sweep(): void {
    const now = this.now();
    for (const [token, entry] of this.held) if (entry.expiresAt <= now) this.held.delete(token);
  }
}
