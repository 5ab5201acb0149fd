import { readFileSync } from 'node:fs';
import { NanoPayError } from '../errors.js';

/**
 * The query parameters of a PostgreSQL URL that hold a secret: libpq's
 * `password` and `sslpassword` (node-postgres takes every parameter as a
 * connection setting). Compared in lower case, after percent-decoding.
 */
const SECRET_PARAMS = new Set(['password', 'sslpassword']);

const isSecretParam = (name: string): boolean => SECRET_PARAMS.has(name.toLowerCase());

/** A database URL that is not one, said without its text (it may hold a password). */
function notAUrl(where: string): NanoPayError {
  return new NanoPayError('INVALID_REQUEST', `${where} is not a valid PostgreSQL URL (its text is not shown: it may hold a password)`, {
    hint: 'Write it as postgres://user@host:5432/database (the port from 1 to 65535), the password in PGPASSWORD or ~/.pgpass.',
  });
}

/**
 * The database URL, checked: a postgres: or postgresql: URL with a valid port.
 * `where` names it in the error (the setting or the variable). With
 * `password: 'refuse'`, a password in any form is refused (what config.json
 * keeps must hold none); no message repeats the URL's text.
 */
export function checkDatabaseUrl(value: string, where: string, { password }: { password: 'refuse' | 'allow' }): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw notAUrl(where);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new NanoPayError('INVALID_REQUEST', `${where} must be a postgres: or postgresql: URL`, { hint: 'Write it as postgres://user@host:5432/database.' });
  }
  if (password === 'refuse' && (url.password !== '' || [...url.searchParams.keys()].some(isSecretParam))) {
    throw new NanoPayError('INVALID_REQUEST', 'config.json is not the place for a password: set database-url without it (user:password@ or ?password=)', {
      hint: 'Give the password in PGPASSWORD or ~/.pgpass (0600), or the whole URL in NANOPAY_DATABASE_URL.',
    });
  }
  return value.replace(/\/+$/, '');
}

/** The URL with its password masked ("***"), in the user part and in the query, for messages and output. */
export function maskDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the configured PostgreSQL database';
  }
  if (parsed.password !== '') parsed.password = '***';
  const secrets = [...parsed.searchParams.keys()].filter(isSecretParam);
  // Rewritten only when there is one to mask: the query is then re-encoded.
  for (const name of secrets) parsed.searchParams.set(name, '***');
  return parsed.toString();
}

/** The query parameters of a PostgreSQL URL that name a file node-postgres reads when it connects. */
const FILE_PARAMS = ['sslrootcert', 'sslcert', 'sslkey'];

/**
 * Each file the URL names (sslrootcert, sslcert, sslkey) can be read, as node-postgres reads it (a directory too is
 * refused): it would otherwise fail with a bare ENOENT or EISDIR. The message names the parameter and the file,
 * never the rest of the URL.
 */
export function checkSslFiles(value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return;
  }
  for (const name of FILE_PARAMS) {
    const file = url.searchParams.get(name);
    if (file === null || file === '') continue;
    try {
      readFileSync(file);
    } catch (error) {
      throw new NanoPayError('STORE_REFUSED', `The database URL's ${name} names ${file}, which cannot be read (${(error as { code?: string }).code ?? 'unreadable'})`, {
        hint: `Give the path of a readable file in ${name}= (the certificate or key of the connection), or leave ${name} out.`,
      });
    }
  }
}
