import { NanoPayError } from '../errors.js';

type Segment = { literal: string } | { param: string };

/** A route path such as `/payment/status/:transaction_id`, split once at start-up. */
export type PathTemplate = Segment[];

export function compilePath(template: string): PathTemplate {
  if (!template.startsWith('/')) throw new Error(`A route path starts with "/", not "${template}"`);
  return template
    .slice(1)
    .split('/')
    .map((s) => (s.startsWith(':') ? { param: s.slice(1) } : { literal: s }));
}

/** The raw (still %-encoded) parameters when `path` fits the template. */
export function matchPath(template: PathTemplate, path: string): Record<string, string> | undefined {
  const parts = path.slice(1).split('/');
  if (parts.length !== template.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, segment] of template.entries()) {
    const part = parts[i] as string;
    if ('literal' in segment) {
      if (part !== segment.literal) return undefined;
    } else {
      if (part === '') return undefined;
      params[segment.param] = part;
    }
  }
  return params;
}

/** Decodes path parameters; a malformed %-escape is the caller's mistake, not our bug. */
export function decodeParams(raw: Record<string, string>): Record<string, string> {
  try {
    return Object.fromEntries(Object.entries(raw).map(([name, value]) => [name, decodeURIComponent(value)]));
  } catch {
    throw new NanoPayError('INVALID_REQUEST', 'The path has a malformed %-escape');
  }
}

/**
 * Splits a request target into path and query without `new URL`, which reads
 * `//host/x` as another host and throws on some targets. Only "/…" is served.
 */
export function splitTarget(target: string): { path: string; query: URLSearchParams } {
  const mark = target.indexOf('?');
  const path = mark === -1 ? target : target.slice(0, mark);
  if (!path.startsWith('/')) throw new NanoPayError('INVALID_REQUEST', 'The request target must be a path starting with "/"');
  return { path, query: new URLSearchParams(mark === -1 ? '' : target.slice(mark + 1)) };
}

/** The path as a log may show it: secret parameters masked, nothing unprintable, bounded. */
export function loggablePath(path: string, template?: PathTemplate, secret: readonly string[] = []): string {
  let shown = path;
  if (template !== undefined && secret.length > 0) {
    const parts = path.slice(1).split('/');
    shown = `/${parts.map((part, i) => {
      const segment = template[i];
      return segment !== undefined && 'param' in segment && secret.includes(segment.param) ? '***' : part;
    }).join('/')}`;
  }
  shown = shown.replace(/[^\x21-\x7e]/g, '?');
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}
