import { createHash, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';

/** SHA-256, hex: enough for secrets of 32 random bytes (keys, session ids), which no dictionary holds. */
export function sha256Hex(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** 32 random bytes, base64url (43 characters). */
export function randomSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Equal strings, in a time that depends on neither (their digests are compared). */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Operators' passwords: scrypt at N = 2^15, r = 8, p = 1 (32 MiB, tens of milliseconds: a sign-in, not a
 * key store unlock), a 16-byte random salt, and the parameters kept with the hash, so that stronger ones
 * later still verify the passwords kept before.
 */
const PARAMS = { logN: 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

function scrypt(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    scryptCallback(password.normalize('NFC'), salt, KEY_LENGTH, { N, r, p, maxmem: 256 * N * r }, (error, key) => (error === null ? resolve(key) : reject(error))),
  );
}

/** `scrypt$logN$r$p$salt$hash` (salt and hash base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, PARAMS.logN, PARAMS.r, PARAMS.p);
  return ['scrypt', PARAMS.logN, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Whether `password` is the one `stored` was made from (compared in constant time); false for anything unreadable. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, logN, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || salt === undefined || hash === undefined) return false;
  const numbers = [logN, r, p].map(Number);
  if (numbers.some((n) => !Number.isInteger(n) || n < 1 || n > 20)) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await scrypt(password, Buffer.from(salt, 'base64url'), numbers[0] as number, numbers[1] as number, numbers[2] as number);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash no password matches, to verify against when the name is unknown: a sign-in takes as long either way. */
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(randomSecret());
  return dummy;
}
let dummy: Promise<string> | undefined;
