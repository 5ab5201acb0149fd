import { createCipheriv, createDecipheriv, createHash, randomBytes, scrypt as scryptCallback, type ScryptOptions } from 'node:crypto';
import { NanoPayError } from '../errors.js';
import { lstat } from 'node:fs/promises';
import { readIfExists, writeFileAtomic } from '../fs/secure-fs.js';
import { withKeystoreLock } from './lock.js';
import { guardMemory } from './undumpable.js';

/**
 * The encrypted secret store. A random 256-bit data key encrypts every secret
 * (AES-256-GCM); the data key itself is wrapped by a key derived from the
 * password (scrypt). The header (format, KDF parameters) is authenticated data,
 * so tampering with it fails decryption instead of weakening the KDF.
 *
 * Wrapped with the data key is a random 256-bit seal key: what only the
 * password opens, it authenticates (the spending policy, approvals). A store
 * wrapped before seal keys existed (32 bytes) gets one at its first unlock;
 * nobody without the password can wrap a store back to 32 bytes.
 */

const FORMAT = 'nanopay-keystore-1';
const KDF = { name: 'scrypt', N: 2 ** 17, r: 8, p: 1, keyLength: 32 } as const;
/** scrypt needs 128·N·r bytes; Node's default cap (32 MiB) is below that for N = 2^17. */
const MAXMEM = 256 * 1024 * 1024;

interface Sealed {
  iv: string;
  data: string;
  tag: string;
}

interface Header {
  format: typeof FORMAT;
  kdf: { name: 'scrypt'; N: number; r: number; p: number; salt: string };
}

interface KeystoreFile extends Header {
  key: Sealed;
  secrets: Record<string, Sealed>;
}

function scrypt(password: string, salt: Buffer, header: Header['kdf']): Promise<Buffer> {
  const options: ScryptOptions = { N: header.N, r: header.r, p: header.p, maxmem: MAXMEM };
  return new Promise((resolve, reject) => {
    scryptCallback(password.normalize('NFKC'), salt, KDF.keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

function headerBytes(header: Header, id: string): Buffer {
  return Buffer.from(JSON.stringify({ format: header.format, kdf: header.kdf, id }));
}

function seal(key: Buffer, plaintext: Buffer, aad: Buffer): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
}

/** Returns undefined when authentication fails (wrong key or altered data). */
function open(key: Buffer, sealed: Sealed, aad: Buffer): Buffer | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(aad);
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]);
  } catch {
    return undefined;
  }
}

function corrupt(path: string, why: string): NanoPayError {
  return new NanoPayError('STORE_CORRUPT', `The key store ${path} is damaged (${why}); it was left untouched`, {
    hint: 'Restore it from a backup, or move it away and re-import your wallets from their seeds.',
  });
}

/**
 * The key store is a regular file of ours: a symbolic link in its place is
 * refused, never followed (it could point anywhere) nor replaced (an atomic
 * write would silently turn it into a regular file).
 */
async function refuseLink(path: string): Promise<void> {
  const info = await lstat(path).catch(() => undefined);
  if (info?.isSymbolicLink()) {
    throw new NanoPayError('STORE_CORRUPT', `The key store ${path} is a symbolic link; nanopay does not follow links for its key store and left it untouched`, {
      hint: 'Put the key store file itself there (or point NANOPAY_CONFIG_DIR at the directory that holds it).',
    });
  }
}

function isSealed(value: unknown): value is Sealed {
  const v = value as Sealed;
  return typeof v === 'object' && v !== null && [v.iv, v.data, v.tag].every((x) => typeof x === 'string');
}

/**
 * KDF parameters a store of ours can have: scrypt's N a power of two from 2^10,
 * and the memory it needs within what we allow. Anything else is damage (or an
 * attempt to make the unlock hang or exhaust memory), refused before scrypt runs.
 */
function sensibleKdf(kdf: Header['kdf']): boolean {
  const { N, r, p } = kdf;
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0)) return false;
  return r <= 32 && p <= 16 && 128 * N * r <= MAXMEM && N >= 2 ** 10 && Number.isInteger(Math.log2(N));
}

function parseFile(path: string, text: string): KeystoreFile {
  let parsed: KeystoreFile;
  try {
    parsed = JSON.parse(text) as KeystoreFile;
  } catch {
    throw corrupt(path, 'not valid JSON');
  }
  const kdf = parsed?.kdf;
  if (parsed?.format !== FORMAT || kdf?.name !== 'scrypt' || typeof kdf.salt !== 'string') throw corrupt(path, 'unknown format');
  if (!sensibleKdf(kdf)) throw corrupt(path, 'bad KDF parameters');
  if (!isSealed(parsed.key) || typeof parsed.secrets !== 'object' || parsed.secrets === null) throw corrupt(path, 'missing fields');
  if (!Object.values(parsed.secrets).every(isSealed)) throw corrupt(path, 'a secret entry is malformed');
  return parsed;
}

/** The shortest password a new key store takes (create, import, config set of a secret): scrypt slows guessing, it does not make "1234" safe. */
export const MIN_PASSWORD_LENGTH = 8;

/** The SHA-256 of a key store's bytes: which content a key store, or an unlocked session, holds. */
function fingerprint(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export class KeyStore {
  private readonly written: (() => Promise<void>)[] = [];
  /** The fingerprint of the content this store was read from, or last wrote. */
  private sum: string;

  /** True when this open gave the store its seal key: policies written before were never sealed. */
  sealKeyAdded = false;

  private constructor(
    readonly path: string,
    private file: KeystoreFile,
    private readonly dataKey: Buffer,
    private sealSecret: Buffer | undefined,
    text: string,
  ) {
    this.sum = fingerprint(text);
  }

  /** The seal key: what authenticates the spending policy and approvals (only the password opens it). */
  sealKey(): Buffer {
    if (this.sealSecret === undefined) throw new NanoPayError('INTERNAL_ERROR', 'The key store has no seal key');
    return this.sealSecret;
  }

  /** The fingerprint of the key store file as it is now, undefined when there is none. */
  static async current(path: string): Promise<string | undefined> {
    await refuseLink(path);
    const text = await readIfExists(path);
    return text === undefined ? undefined : fingerprint(text);
  }

  static async exists(path: string): Promise<boolean> {
    await refuseLink(path);
    return (await readIfExists(path)) !== undefined;
  }

  /**
   * A new, empty store protected by `password`. Refuses to overwrite an existing one.
   * `N` is scrypt's cost, 2^17 unless given: only test fixtures ask for less (a store
   * records its N, and one from 2^10 up opens), so that a suite is not hundreds of
   * 128 MiB derivations.
   */
  static async create(path: string, password: string, N: number = KDF.N): Promise<KeyStore> {
    if (await KeyStore.exists(path)) {
      throw new NanoPayError('CONFLICT', `A key store already exists at ${path}`);
    }
    if (password.length === 0) throw new NanoPayError('PASSWORD_REQUIRED', 'The password must not be empty');
    guardMemory();
    const header: Header = { format: FORMAT, kdf: { name: 'scrypt', N, r: KDF.r, p: KDF.p, salt: randomBytes(16).toString('base64') } };
    if (!sensibleKdf(header.kdf)) throw new RangeError(`scrypt N must be a power of two from 2^10 within the memory cap, not ${N}`);
    const keys = randomBytes(64);
    const passwordKey = await scrypt(password, Buffer.from(header.kdf.salt, 'base64'), header.kdf);
    const file: KeystoreFile = { ...header, key: seal(passwordKey, keys, headerBytes(header, 'key')), secrets: {} };
    const store = new KeyStore(path, file, keys.subarray(0, 32), keys.subarray(32), '');
    await store.commit((secrets) => secrets, 'new');
    return store;
  }

  /** Unlocks an existing store. A wrong password never changes the file. */
  static async open(path: string, password: string): Promise<KeyStore> {
    guardMemory();
    await refuseLink(path);
    const text = await readIfExists(path);
    if (text === undefined) throw new NanoPayError('NOT_FOUND', `No key store at ${path}`, { hint: 'Create a wallet first: nanopay wallet create' });
    const file = parseFile(path, text);
    const passwordKey = await scrypt(password, Buffer.from(file.kdf.salt, 'base64'), file.kdf);
    const keys = open(passwordKey, file.key, headerBytes(file, 'key'));
    if (keys === undefined || (keys.length !== 32 && keys.length !== 64)) {
      throw new NanoPayError('WRONG_PASSWORD', 'Wrong password for the key store', {
        hint: 'The store was not changed. Check NANOPAY_PASSWORD, --password-file or what you typed.',
      });
    }
    const store = new KeyStore(path, file, keys.subarray(0, 32), keys.length === 64 ? keys.subarray(32) : undefined, text);
    for (const id of Object.keys(file.secrets)) {
      if (store.get(id) === undefined) throw corrupt(path, `secret "${id}" does not decrypt`);
    }
    if (store.sealSecret === undefined) await store.addSealKey(passwordKey);
    return store;
  }

  /**
   * Wraps a seal key with the data key (a store made before seal keys existed):
   * once, under the store's lock, unless another process did it meanwhile
   * (then its seal key is taken).
   */
  private async addSealKey(passwordKey: Buffer): Promise<void> {
    await withKeystoreLock(this.path, async () => {
      const text = await readIfExists(this.path);
      const current = text === undefined ? undefined : parseFile(this.path, text);
      const keys = current === undefined ? undefined : open(passwordKey, current.key, headerBytes(current, 'key'));
      if (current === undefined || keys === undefined || !keys.subarray(0, 32).equals(this.dataKey)) {
        throw new NanoPayError('CONFLICT', `The key store ${this.path} was replaced by another process while this one opened it; nothing was written`, { hint: 'Run the command again.' });
      }
      if (keys.length === 64) {
        this.file = current;
        this.sealSecret = keys.subarray(32);
        this.sum = fingerprint(text as string);
        return;
      }
      const sealKey = randomBytes(32);
      const next: KeystoreFile = { ...current, key: seal(passwordKey, Buffer.concat([this.dataKey, sealKey]), headerBytes(current, 'key')) };
      const written = `${JSON.stringify(next, null, 2)}\n`;
      await writeFileAtomic(this.path, written);
      this.file = next;
      this.sealSecret = sealKey;
      this.sum = fingerprint(written);
      this.sealKeyAdded = true;
    });
  }

  /** Opens the store, creating it first when there is none yet. */
  static async openOrCreate(path: string, password: string): Promise<KeyStore> {
    if (await KeyStore.exists(path)) return KeyStore.open(path, password);
    try {
      return await KeyStore.create(path, password);
    } catch (error) {
      // Another process made the store while scrypt ran here: the password is checked against that one.
      if (error instanceof NanoPayError && error.code === 'CONFLICT' && (await KeyStore.exists(path))) return KeyStore.open(path, password);
      throw error;
    }
  }

  ids(): string[] {
    return Object.keys(this.file.secrets);
  }

  /** The fingerprint of the content this store holds (see KeyStore.current). */
  fingerprint(): string {
    return this.sum;
  }

  /** Runs `listener` after each write of the file (the session ends unlocked sessions, which hold the old content). */
  afterWrite(listener: () => Promise<void>): void {
    this.written.push(listener);
  }

  get(id: string): string | undefined {
    const sealed = this.file.secrets[id];
    if (sealed === undefined) return undefined;
    return open(this.dataKey, sealed, headerBytes(this.file, id))?.toString('utf8');
  }

  async set(id: string, secret: string): Promise<void> {
    await this.commit((secrets) => ({ ...secrets, [id]: seal(this.dataKey, Buffer.from(secret, 'utf8'), headerBytes(this.file, id)) }));
  }

  async delete(ids: string[]): Promise<void> {
    await this.commit((secrets) => Object.fromEntries(Object.entries(secrets).filter(([id]) => !ids.includes(id))));
  }

  /**
   * Writes `edit` applied to the file's newest content, as the key store's only
   * writer: a secret another process stored since this one read the file is
   * kept, not overwritten. Every secret of the result must decrypt before it
   * replaces the file.
   */
  private async commit(edit: (secrets: Record<string, Sealed>) => Record<string, Sealed>, mode: 'new' | 'update' = 'update'): Promise<void> {
    await withKeystoreLock(this.path, async () => {
      await refuseLink(this.path);
      const text = await readIfExists(this.path);
      if (mode === 'new' && text !== undefined) throw new NanoPayError('CONFLICT', `A key store already exists at ${this.path}`);
      const base = mode === 'new' ? this.file : this.newest(text);
      const next: KeystoreFile = { ...base, secrets: edit({ ...base.secrets }) };
      for (const [id, sealed] of Object.entries(next.secrets)) {
        if (open(this.dataKey, sealed, headerBytes(next, id)) === undefined) {
          throw new NanoPayError('INTERNAL_ERROR', `Refusing to write a key store whose secret "${id}" does not decrypt`);
        }
      }
      const written = `${JSON.stringify(next, null, 2)}\n`;
      await writeFileAtomic(this.path, written);
      this.file = next;
      this.sum = fingerprint(written);
    });
    for (const listener of this.written) await listener();
  }

  /** What a write builds on: the content this store holds, or the newer content another process wrote to this same store. */
  private newest(text: string | undefined): KeystoreFile {
    if (text !== undefined && fingerprint(text) === this.sum) return this.file;
    const current = text === undefined ? undefined : parseFile(this.path, text);
    // The same KDF salt and wrapped data key: the same store, whose secrets this data key decrypts.
    if (current === undefined || JSON.stringify([current.kdf, current.key]) !== JSON.stringify([this.file.kdf, this.file.key])) {
      throw new NanoPayError('CONFLICT', `The key store ${this.path} was ${current === undefined ? 'removed' : 'replaced'} by another process while this one ran; nothing was written`, {
        hint: 'Run the command again.',
      });
    }
    return current;
  }
}
