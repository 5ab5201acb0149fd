import { watchPayment, type PaymentStatusResult } from '../../ops/requests/payments.js';
import type { Session } from '../../ops/session.js';
import { progress } from './spinner.js';
import { withSandboxMark } from '../../ops/observe.js';

/** Live polling shared by `status --watch` and `request --watch`: NDJSON events in JSON mode, a spinner otherwise. */
export async function watch(
  command: { log(message?: string): void },
  session: Session,
  id: string,
  options: { interval: number; timeout: number | undefined; json: boolean; signal: AbortSignal },
): Promise<PaymentStatusResult> {
  const spinner = await progress(`Waiting for payment ${id}`, !options.json);
  const started = Date.now();
  let failing = '';
  const show = (): void => spinner.update(`Waiting for payment ${id} (${Math.round((Date.now() - started) / 1000)} s)${failing}`);
  const tick = setInterval(show, 1000);
  try {
    const paid = await watchPayment(session, id, {
      intervalMs: options.interval * 1000,
      signal: options.signal,
      ...(options.timeout === undefined ? {} : { timeoutMs: options.timeout * 1000 }),
      onEvent: (event) => {
        if (options.json) process.stdout.write(`${JSON.stringify(withSandboxMark(event))}\n`);
        else if (event.event === 'error') {
          // Each failure gets its own line (a spinner's text alone would vanish, and there is none off a terminal).
          const retry = `retrying in ${Math.round(event.retry_in_ms / 1000)} s`;
          process.stderr.write(`Warning [${event.code}] ${event.message}; ${retry}\n`);
          failing = `; the service is failing, ${retry}`;
          show();
        } else failing = '';
      },
    });
    spinner.succeed(`Paid: ${paid.message}`);
    if (!process.stderr.isTTY) command.log(`Paid: ${paid.message}`);
    return paid;
  } finally {
    clearInterval(tick);
    spinner.stop();
  }
}
