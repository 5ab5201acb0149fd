import { NanoPayError, redactUrl } from '../errors.js';

/**
 * What a failed fetch() means, for a request to `url`: undici says only
 * "fetch failed" and puts the reason in `cause`. Headers past Node's bound
 * (16 KB) are ANSWER_TOO_LARGE; any other network failure is REQUEST_ERROR.
 * An abort, or anything that is not a network failure, is returned as it is.
 */
export function fetchFailure(error: unknown, url: string): unknown {
  if (!(error instanceof TypeError) || error.message !== 'fetch failed') return error;
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const shown = redactUrl(url);
  if (cause?.code === 'UND_ERR_HEADERS_OVERFLOW') {
    return new NanoPayError('ANSWER_TOO_LARGE', `The answer of ${shown} has headers larger than nanopay reads (16 KB); nothing was paid`, {
      hint: 'An x402 challenge is far smaller: the server is misconfigured or hostile. Tell its operator, or use another server.',
      cause: error,
    });
  }
  const reason = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? redactUrl(cause.message) : 'no answer';
  return new NanoPayError('REQUEST_ERROR', `Could not reach ${shown}: ${reason}`, { hint: 'Check the URL, and that the server runs and can be reached from here.', cause: error });
}
