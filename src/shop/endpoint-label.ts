import { createHash } from 'node:crypto';

/**
 * How a webhook endpoint is shown and recorded: its URL with a password and the query's values masked (a
 * token in a URL is a secret), and, when something was masked, a short digest of the whole URL, so that two
 * endpoints differing only there stay two. A URL with nothing secret is itself.
 */
export function endpointLabel(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  let masked = false;
  if (parsed.password !== '') {
    parsed.password = '***';
    masked = true;
  }
  const query = [...parsed.searchParams.keys()];
  if (query.length > 0) {
    parsed.search = query.map((name) => `${encodeURIComponent(name)}=***`).join('&');
    masked = true;
  }
  return masked ? `${parsed.toString().replaceAll('%2A%2A%2A', '***')} #${createHash('sha256').update(url).digest('hex').slice(0, 8)}` : url;
}
