import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { NanoPayError } from '../errors.js';
import { endpointLabel } from './endpoint-label.js';
import { destinationTopic, WEBHOOK_TOPIC, type WebhookEvent } from '../store/shop.js';
import type { OutboxItem, Store } from '../store/store.js';
import { SIGNATURE_HEADER, signWebhook } from './signature.js';

/** Retries go on this long after the event (then it is marked failed, and `webhooks resend` can try again). */
const WEBHOOK_RETRY_PERIOD_MS = 3 * 24 * 3600 * 1000;
/** The longest wait between two attempts. */
const MAX_BACKOFF_MS = 3600 * 1000;
/** An endpoint that has not answered in this long failed this attempt, unless told otherwise. */
const TIMEOUT_MS = 10_000;
/**
 * How long past the endpoints' timeout a worker holds an event it is delivering: past it (the worker
 * died, kill -9), another worker or the restarted server takes it.
 */
const LEASE_MARGIN_MS = 5_000;

/** The body sent (and signed): the event without its delivery record. */
function webhookBody(event: WebhookEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, created: event.created, data: event.data });
}

/** What an endpoint said to one attempt. */
export interface DeliveryAnswer {
  url: string;
  /** The HTTP status, or undefined when there was none (refused, timed out). */
  status?: number;
  error?: string;
}

/** One POST, signed; resolves with the answer, never rejects (cut by `signal`: no answer). */
function post(url: string, body: string, signature: string, timeoutMs: number, signal: AbortSignal): Promise<DeliveryAnswer> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return resolve({ url, error: 'not a URL' });
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [SIGNATURE_HEADER.toLowerCase()]: signature, 'user-agent': 'nanopay-webhooks/1' },
        timeout: timeoutMs,
        signal,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ url, status: res.statusCode ?? 0 }));
        res.on('error', () => resolve({ url, status: res.statusCode ?? 0 }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ url, error: signal.aborted ? 'cut short: the server stopped' : (error.code ?? error.message) }));
    req.end(body);
  });
}

export interface DelivererOptions {
  store: Store;
  endpoints: readonly string[];
  /**
   * A listener's own destination (listen --forward-to): its events, and its own delivery state of each. Without
   * it, the live endpoints' (checkout serve --webhook), recorded in the events themselves.
   */
  destination?: string;
  /**
   * Signing secrets, the current one first (several while rotating: one v1 each); a function is asked before
   * each delivery, so a secret rotated in its file signs the next one (checkout serve's webhook.secret).
   */
  secrets: readonly string[] | (() => Promise<readonly string[]>);
  /** The first retry's wait; each next one doubles, up to an hour. Default 1 s. */
  backoffMs?: number;
  /** An endpoint's time to answer. Default 10 s. */
  timeoutMs?: number;
  /** Events delivered at once (each request's in order whatever this is). Default 4. */
  concurrency?: number;
  /** Each attempt, with its answers. */
  onAttempt?: (event: WebhookEvent, answers: DeliveryAnswer[], delivered: boolean) => void;
  log?: (line: string) => void;
}

const ok = (a: DeliveryAnswer): boolean => a.status !== undefined && a.status >= 200 && a.status < 300;

/**
 * Delivers the webhook events of the store's outbox, at least once: an event is
 * done when every endpoint answered 2xx; otherwise it is retried, to the
 * endpoints that have not taken it, after 1 s, 2 s, 4 s… (at most an hour
 * apart) until three days after it happened. An event is
 * held back while an earlier one of its request is not delivered, so a
 * request's events arrive in order. The outbox is the store's: a restart, or
 * kill -9 mid-delivery (its lease runs out), loses nothing; several servers on
 * one PostgreSQL share the work, each event to one at a time.
 */
export class WebhookDeliverer {
  private stopped = false;
  private workers: Promise<void>[] = [];
  /** Idle workers' wake-ups. */
  private readonly sleepers = new Set<() => void>();

  private readonly topic: string;
  /** Aborted when a stop's bound runs out: the posts still waiting for an answer are cut, and their events put back. */
  private cut = new AbortController();

  constructor(private readonly options: DelivererOptions) {
    this.topic = options.destination === undefined ? WEBHOOK_TOPIC : destinationTopic(options.destination);
  }

  start(): void {
    this.stopped = false;
    this.cut = new AbortController();
    this.workers = Array.from({ length: this.options.concurrency ?? 4 }, () => this.work());
  }

  /** New events may be due: look now rather than at the next second. */
  poke(): void {
    for (const wake of this.sleepers) wake();
  }

  /**
   * Takes no new event, and lets the deliveries in flight finish within `graceMs`; past it they are
   * cut and their events put back in the outbox, due at once (for this server restarted, or another).
   */
  async stop(graceMs = Infinity): Promise<void> {
    this.stopped = true;
    this.poke();
    const finished = Promise.all(this.workers);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      if (graceMs !== Infinity) timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([finished, late.then(() => this.cut.abort())]);
    clearTimeout(timer);
    await finished;
  }

  private async work(): Promise<void> {
    while (!this.stopped) {
      let item: OutboxItem | undefined;
      try {
        item = await this.options.store.outbox.claim(this.topic, (this.options.timeoutMs ?? TIMEOUT_MS) + LEASE_MARGIN_MS);
        if (item !== undefined) await this.deliver(item);
      } catch (error) {
        this.options.log?.(`webhook delivery: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (item === undefined && !this.stopped) {
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            clearTimeout(timer);
            this.sleepers.delete(wake);
            resolve();
          };
          const timer = setTimeout(wake, 1000);
          this.sleepers.add(wake);
        });
      }
    }
  }

  private async deliver(item: OutboxItem): Promise<void> {
    const { store, destination } = this.options;
    const { event_id: eventId, resend, resent_at: resentAt } = item.payload as { event_id: string; resend?: boolean; resent_at?: number };
    const event = await store.shop.event(eventId);
    // A listener's state is its own: gone with it when it expired.
    const state = event === undefined ? undefined : destination === undefined ? event.delivery : await store.shop.delivery(event.id, destination);
    if (event === undefined || state === undefined || (resend !== true && (state.delivered_at !== undefined || state.failed === true))) return store.outbox.done(item.id);
    const requestId = event.data.object.id;
    if (resend !== true && (await store.shop.earlierPending(requestId, event.request_seq, destination))) {
      // Its request's earlier event goes first.
      return store.outbox.retry(item.id, 500);
    }
    const body = webhookBody(event);
    const secrets = this.options.secrets;
    const signature = signWebhook(typeof secrets === 'function' ? await secrets() : secrets, body);
    // A retry goes only to the endpoints that have not taken it yet (a resend goes to all).
    // Endpoints are recorded by their label: a URL's password or query token never reaches the store.
    const already = new Set(resend === true ? [] : (state.delivered_to ?? []));
    const endpoints = this.options.endpoints.filter((url) => !already.has(endpointLabel(url)));
    const answers = await Promise.all(endpoints.map((url) => post(url, body, signature, this.options.timeoutMs ?? TIMEOUT_MS, this.cut.signal)));
    const cut = this.cut.signal.aborted;
    const deliveredTo = [...new Set([...already, ...answers.filter(ok).map((a) => endpointLabel(a.url))])];
    const delivered = answers.every(ok);
    const attempts = state.attempts + 1;
    const now = new Date();
    const lastResult = answers.map((a) => `${endpointLabel(a.url)} ${a.status ?? a.error}`).join('; ');
    this.options.onAttempt?.(event, answers, delivered);
    if (delivered) {
      await store.shop.recordDelivery(event.id, { attempts, delivered_at: now.toISOString(), last_attempt_at: now.toISOString(), last_result: lastResult, delivered_to: deliveredTo }, destination);
      return store.outbox.done(item.id);
    }
    // A resent event gets its own retry period, from when it was resent. One cut by a stop goes again at once.
    const giveUp = !cut && now.getTime() - Math.max(event.created * 1000, resentAt ?? 0) > WEBHOOK_RETRY_PERIOD_MS;
    await store.shop.recordDelivery(
      event.id,
      {
        attempts,
        last_attempt_at: now.toISOString(),
        last_result: lastResult,
        delivered_to: deliveredTo,
        ...(giveUp ? { failed: true } : {}),
        ...(state.delivered_at === undefined ? {} : { delivered_at: state.delivered_at }),
      },
      destination,
    );
    if (giveUp) {
      this.options.log?.(`webhook ${event.id} given up after ${attempts} attempts (${lastResult}); nanopay webhooks resend ${event.id} tries again`);
      return store.outbox.done(item.id);
    }
    const wait = cut ? 0 : Math.min(MAX_BACKOFF_MS, (this.options.backoffMs ?? 1000) * 2 ** Math.min(attempts - 1, 30));
    if (!cut) this.options.log?.(`webhook ${event.id} (${event.type}) not delivered: ${lastResult}; attempt ${attempts + 1} in ${Math.max(1, Math.round(wait / 1000))} s`);
    await store.outbox.retry(item.id, wait);
  }
}

/**
 * The events not yet delivered to the live endpoints (every instance's, from the store), and how long
 * the oldest of them has waited: since it happened, or since it was resent.
 */
export async function webhookBacklog(store: Store): Promise<{ pending: number; oldestSeconds: number }> {
  const { count, oldest } = await store.outbox.backlog(WEBHOOK_TOPIC);
  const { event_id: eventId, resent_at: resentAt } = (oldest ?? {}) as { event_id?: string; resent_at?: number };
  const event = eventId === undefined ? undefined : await store.shop.event(eventId);
  const since = resentAt ?? (event === undefined ? undefined : event.created * 1000);
  return { pending: count, oldestSeconds: since === undefined ? 0 : Math.max(0, (Date.now() - since) / 1000) };
}

/** Queues event `id` to be delivered once more (same id and body, a new signature), whatever happened to it before. */
export async function resendWebhook(store: Store, id: string): Promise<WebhookEvent> {
  const event = await store.shop.event(id);
  if (event === undefined) throw new NanoPayError('NOT_FOUND', `No webhook event ${id.slice(0, 80)}`, { hint: 'nanopay webhooks list shows them.' });
  await store.outbox.enqueue(WEBHOOK_TOPIC, { event_id: event.id, resend: true, resent_at: Date.now() });
  return event;
}
