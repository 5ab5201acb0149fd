import { NanoPayError } from '../../errors.js';

/**
 * Hosts as host rules and x402 payments name them, in one form: lower case,
 * international names in punycode, no trailing dot, IP literals as the URL
 * parser writes them (127.1 is 127.0.0.1, an IPv4-mapped IPv6 literal its IPv4
 * address), and the port. Two spellings of one host never get past a rule
 * written with the other.
 */
interface Host {
  name: string;
  /** Absent in a rule: every port. */
  port?: number;
}

/** x402 is HTTPS: a payment's host names its port unless it is 443, and a rule's `:443` means that. */
const SHOWN_DEFAULT_PORT = 443;

function mappedIpv4(name: string): string | undefined {
  const groups = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(name);
  if (groups === null) return undefined;
  const [high, low] = [parseInt(groups[1] as string, 16), parseInt(groups[2] as string, 16)];
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

function canonicalName(raw: string): string | undefined {
  if (/[/?#@\\\s%]/.test(raw) || !URL.canParse(`http://${raw}/`)) return undefined;
  const name = new URL(`http://${raw}/`).hostname.replace(/\.+$/, '');
  if (name === '' || name.includes('..')) return undefined;
  return mappedIpv4(name) ?? name;
}

function parseHost(text: string): Host | undefined {
  const parts = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(text.trim());
  if (parts === null) return undefined;
  const name = canonicalName(parts[1] as string);
  const port = parts[2] === undefined ? undefined : Number(parts[2]);
  if (name === undefined || (port !== undefined && (port < 1 || port > 65535))) return undefined;
  return port === undefined ? { name } : { name, port };
}

const shown = (host: Host): string => (host.port === undefined ? host.name : `${host.name}:${host.port}`);

/** The host a payment to `url` pays, as rules and the audit see it: "api.example.com", "127.0.0.1:8402", "api.example.com:80". */
export function hostOfUrl(url: URL): string {
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'http:' ? 80 : SHOWN_DEFAULT_PORT;
  const name = canonicalName(url.hostname) ?? url.hostname;
  return shown(port === SHOWN_DEFAULT_PORT ? { name } : { name, port });
}

/**
 * An MCP server as host rules and payments name it: `mcp:SERVER` (the name a
 * user gives the server) or `mcp:SERVER/TOOL` (one of its tools). A rule on
 * the server names each of its tools.
 */
const MCP_IDENTITY = /^mcp:([a-z0-9][a-z0-9._-]{0,62})(?:\/([A-Za-z0-9_.-]{1,128}))?$/;

/** The form of an MCP identity (the server's name in lower case), or undefined when `text` is none. */
export function mcpIdentity(text: string): string | undefined {
  const match = MCP_IDENTITY.exec(text.trim().replace(/^mcp:([^/]*)/i, (_m, name: string) => `mcp:${name.toLowerCase()}`));
  return match === null ? undefined : `mcp:${match[1]}${match[2] === undefined ? '' : `/${match[2]}`}`;
}

/** A host rule's key in the one form (`*.example.com`, `api.example.com:8080`), or a USAGE-like refusal naming the forms. */
export function hostRule(text: string): string {
  const trimmed = text.trim();
  if (trimmed.toLowerCase().startsWith('mcp:')) {
    const identity = mcpIdentity(trimmed);
    if (identity === undefined) throw new NanoPayError('INVALID_REQUEST', `"${text}" is not an MCP server: write it like mcp:weather or mcp:weather/forecast (a tool of it)`);
    return identity;
  }
  const wildcard = trimmed.startsWith('*.');
  const host = parseHost(wildcard ? trimmed.slice(2) : trimmed);
  if (host === undefined || (wildcard && host.name.startsWith('['))) {
    throw new NanoPayError('INVALID_REQUEST', `"${text}" is not a host: write it like api.example.com, api.example.com:8080 or *.example.com (no scheme, no path), or mcp:SERVER[/TOOL]`);
  }
  return `${wildcard ? '*.' : ''}${shown(host)}`;
}

/**
 * Whether a host rule names the host a payment pays: example.com names it on
 * any port, example.com:8080 on that port only (example.com:443 is
 * https://example.com/), *.example.com every host under it. Both sides are
 * compared in the one form, whatever form they were written or stored in.
 */
export function hostMatches(rule: string, host: string): boolean {
  if (rule.startsWith('mcp:') || host.startsWith('mcp:')) {
    const [r, h] = [mcpIdentity(rule), mcpIdentity(host)];
    return r !== undefined && h !== undefined && (h === r || (!r.includes('/') && h.startsWith(`${r}/`)));
  }
  const wildcard = rule.trim().startsWith('*.');
  const r = parseHost(wildcard ? rule.trim().slice(2) : rule);
  const h = parseHost(host);
  if (r === undefined || h === undefined) return false;
  if (r.port !== undefined && r.port !== (h.port ?? SHOWN_DEFAULT_PORT)) return false;
  return wildcard ? h.name.endsWith(`.${r.name}`) : h.name === r.name;
}
