import { serviceOnly } from '../../api/backend.js';
import { NanoPayError } from '../../errors.js';
import { deriveAccount, generateSeed, type AccountSource } from '../../nano/index.js';
import { refuseLaneIndex, type ProfileRecord, type WalletKind, type WalletRecord } from '../../wallet/config.js';
import { sealProfile } from '../spending/seal.js';
import { openUnlocked } from '../../wallet/unlocked.js';
import { keystorePath } from '../../wallet/paths.js';
import { WALLET_KINDS } from '../../wallet/wallet-keys.js';
import { isAbsolute } from 'node:path';
import { secretIds, type Session } from '../session.js';

export interface WalletSummary {
  name: string;
  kind: WalletKind;
  remote: boolean;
  active: boolean;
  active_account: number | null;
  accounts: { index: number; address: string }[];
  created_at: string;
}

export interface CreatedWallet extends WalletSummary {
  address: string;
  backup: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function checkName(name: string): string {
  if (!NAME.test(name)) {
    throw new NanoPayError('INVALID_REQUEST', `Invalid wallet name "${name}": use letters, digits, dot, dash or underscore (up to 64)`);
  }
  return name;
}

function summary(session: Session, name: string, record: WalletRecord): WalletSummary {
  const profile = session.profile();
  const active = profile.activeWallet === name;
  return {
    name,
    kind: record.kind,
    remote: record.remote === true,
    active,
    active_account: active ? (profile.activeAccount ?? 0) : null,
    accounts: Object.entries(record.accounts)
      .map(([index, address]) => ({ index: Number(index), address }))
      .sort((a, b) => a.index - b.index),
    created_at: record.createdAt,
  };
}

function nextName(session: Session): string {
  const wallets = session.profile().wallets;
  for (let i = 1; ; i++) {
    const name = i === 1 ? 'default' : `wallet-${i}`;
    if (wallets[name] === undefined) return name;
  }
}

function backupHint(name: string): string {
  return `Back up this wallet now: run "nanopay wallet export ${name}" and keep the secret offline. Anyone with it can spend the funds; without it they cannot be recovered.`;
}

async function store(session: Session, name: string, kind: WalletKind, secret: string, extra: { passphrase?: string; apiKey?: string; remote?: boolean; index?: number }): Promise<CreatedWallet> {
  checkName(name);
  if (session.profile().wallets[name] !== undefined) {
    throw new NanoPayError('CONFLICT', `A wallet named "${name}" already exists in profile "${session.profileName}"`, {
      hint: 'Choose another name with --name, or remove the old one first.',
    });
  }
  const index = extra.index ?? 0;
  const source: AccountSource =
    kind === 'private-key'
      ? { privateKey: secret }
      : kind === 'seed'
        ? { seed: secret, index }
        : { mnemonic: secret, passphrase: extra.passphrase ?? '', legacy: kind === 'legacy-mnemonic', index };
  // Derive before storing anything: an invalid secret must leave no trace.
  const account = deriveAccount(source);
  // Read before the key store is written: the profile is updated right after its secrets, with no wait between.
  const contacts = Object.fromEntries(Object.entries(await session.contacts.all()).map(([n, c]) => [n, c.address]));
  const keystore = await session.keystore('create');
  await keystore.set(secretIds.wallet(session.profileName, name), kind === 'private-key' ? secret.toUpperCase() : secret);
  if (extra.passphrase) await keystore.set(secretIds.passphrase(session.profileName, name), extra.passphrase);
  if (extra.apiKey !== undefined) await keystore.set(secretIds.apiKey(session.profileName), extra.apiKey);
  const record: WalletRecord = {
    kind,
    createdAt: new Date().toISOString(),
    accounts: { [String(index)]: account.address },
    ...(extra.remote ? { remote: true } : {}),
  };
  const profile = session.updateProfile((p) => {
    const next: ProfileRecord = {
      ...p,
      wallets: { ...p.wallets, [name]: record },
      // The first wallet becomes the active one.
      ...(p.activeWallet === undefined ? { activeWallet: name, activeAccount: index } : {}),
    };
    // A profile's first wallet: its policy (none yet, or set before it had one) is sealed now, with the password.
    return Object.keys(p.wallets).length === 0 ? sealProfile(keystore.sealKey(), session.profileName, next, contacts) : next;
  });
  return { ...summary(session, name, profile.wallets[name] as WalletRecord), address: account.address, backup: backupHint(name) };
}

/** A new wallet from a seed made on this machine: the keys never leave it. */
export async function createWallet(session: Session, input: { name?: string } = {}): Promise<CreatedWallet> {
  return store(session, input.name ?? nextName(session), 'seed', generateSeed(), {});
}

/** A wallet made by the service (POST /wallet/create); its secrets and API key are stored encrypted. */
export async function createRemoteWallet(session: Session, input: { name?: string } = {}): Promise<CreatedWallet> {
  const name = checkName(input.name ?? nextName(session));
  if (session.backendKind() === 'node') throw serviceOnly('A wallet made by the service (--remote)');
  await session.keystore('create');
  const remote = await session.anonymousApi().createWallet();
  if (deriveAccount({ seed: remote.seed, index: 0 }).address !== remote.address) {
    throw new NanoPayError('INVALID_DATA', 'The service returned a seed that does not derive the address it sent; nothing was stored');
  }
  return store(session, name, 'seed', remote.seed, { apiKey: remote.apiKey, remote: true });
}

export interface ImportInput {
  name?: string;
  kind: 'seed' | 'mnemonic' | 'private-key';
  secret: string;
  passphrase?: string;
  /** A 24-word mnemonic that encodes a 64-hex seed (legacy mobile wallets). */
  legacy?: boolean;
  index?: number;
}

export async function importWallet(session: Session, input: ImportInput): Promise<CreatedWallet> {
  const secret = input.secret.trim();
  const kind: WalletKind = input.kind === 'mnemonic' && input.legacy ? 'legacy-mnemonic' : input.kind;
  const normalized = kind === 'mnemonic' || kind === 'legacy-mnemonic' ? secret.toLowerCase().split(/\s+/).join(' ') : secret;
  return store(session, input.name ?? nextName(session), kind, normalized, {
    ...(input.passphrase === undefined ? {} : { passphrase: input.passphrase }),
    ...(input.index === undefined ? {} : { index: input.index }),
  });
}

export function listWallets(session: Session): WalletSummary[] {
  return Object.entries(session.profile().wallets).map(([name, record]) => summary(session, name, record));
}

function requireWallet(session: Session, name: string): WalletRecord {
  const record = session.profile().wallets[name];
  if (record === undefined) {
    throw new NanoPayError('NOT_FOUND', `No wallet named "${name}" in profile "${session.profileName}"`, { hint: 'See them with: nanopay wallet list' });
  }
  return record;
}

/** Makes a wallet (and account index) the active one, deriving the account if new. */
export async function useWallet(session: Session, input: { name: string; index?: number }): Promise<WalletSummary> {
  const record = requireWallet(session, input.name);
  const index = input.index ?? 0;
  refuseLaneIndex(index);
  let address = record.accounts[String(index)];
  if (address === undefined) address = (await session.derive(input.name, record, index)).address;
  const profile = session.updateProfile((p) => {
    const wallet = p.wallets[input.name] as WalletRecord;
    return { ...p, activeWallet: input.name, activeAccount: index, wallets: { ...p.wallets, [input.name]: { ...wallet, accounts: { ...wallet.accounts, [String(index)]: address } } } };
  });
  return summary(session, input.name, profile.wallets[input.name] as WalletRecord);
}

export function showWallet(session: Session, name?: string): WalletSummary {
  const wallet = name ?? session.profile().activeWallet;
  if (wallet === undefined) throw new NanoPayError('NOT_FOUND', 'No active wallet', { hint: 'Create one with: nanopay wallet create' });
  return summary(session, wallet, requireWallet(session, wallet));
}

export interface ExportedWallet {
  name: string;
  kind: WalletKind;
  secret: string;
  passphrase?: string;
  accounts: { index: number; address: string; private_key: string }[];
  /** The profile's API key in the key store (it holds the credits bought), when set. */
  api_key?: string;
  /** The profile's node-auth in the key store, when set. */
  node_auth?: string;
}

/** The wallet's secrets and the profile's credentials, from the key store unlocked with the password. Front ends call this only after the user confirmed. */
export async function exportWallet(session: Session, name?: string): Promise<ExportedWallet> {
  const wallet = name ?? showWallet(session).name;
  const record = requireWallet(session, wallet);
  const keystore = await session.keystore();
  const secret = keystore.get(secretIds.wallet(session.profileName, wallet));
  if (secret === undefined) throw new NanoPayError('STORE_CORRUPT', `The secret of wallet "${wallet}" is missing from the key store`);
  const passphrase = keystore.get(secretIds.passphrase(session.profileName, wallet));
  const accounts = [];
  for (const index of Object.keys(record.accounts).map(Number).sort((a, b) => a - b)) {
    const account = await session.privateAccount(wallet, record, index);
    accounts.push({ index, address: account.address, private_key: account.privateKey });
  }
  const apiKey = keystore.get(secretIds.apiKey(session.profileName));
  const nodeAuth = keystore.get(secretIds.nodeAuth(session.profileName));
  return {
    name: wallet,
    kind: record.kind,
    secret,
    ...(passphrase === undefined ? {} : { passphrase }),
    accounts,
    ...(apiKey === undefined ? {} : { api_key: apiKey }),
    ...(nodeAuth === undefined ? {} : { node_auth: nodeAuth }),
  };
}

export async function removeWallet(session: Session, name: string): Promise<{ removed: string }> {
  requireWallet(session, name);
  const keystore = await session.keystore();
  await keystore.delete([secretIds.wallet(session.profileName, name), secretIds.passphrase(session.profileName, name)]);
  session.updateProfile((p) => {
    const { [name]: _removed, ...wallets } = p.wallets;
    const next = { ...p, wallets };
    if (p.activeWallet === name) {
      delete next.activeWallet;
      delete next.activeAccount;
    }
    return next;
  });
  return { removed: name };
}

export interface AttachedSession {
  profile: string;
  socket: string;
  /** The scope the session was granted at unlock. */
  scope: string;
  wallets: WalletSummary[];
}

/**
 * Uses the wallets of an unlocked session another user of this machine
 * shares (unlock --socket --group): the strongest mode, where the keys, the
 * policy and its records belong to that user and this one reaches them only
 * through the socket. The profile then signs through that session only: it
 * holds no secret of its own, and every spend is judged there.
 */
export async function attachSession(session: Session, socket: string): Promise<AttachedSession> {
  if (!isAbsolute(socket)) throw new NanoPayError('USAGE', `The session's socket is an absolute path, not "${socket}"`);
  const shared = await openUnlocked(session.dir, session.profileName, keystorePath(session.dir), socket);
  if (shared === undefined) {
    throw new NanoPayError('NOT_FOUND', `No unlocked session answers at ${socket}`, { hint: 'Its owner starts it (nanopay unlock --socket PATH --group GROUP), with your user in that group.' });
  }
  const held = await shared.wallets();
  const records: Record<string, WalletRecord> = {};
  for (const [name, kind] of Object.entries(held)) {
    if (!(WALLET_KINDS as readonly string[]).includes(kind)) continue;
    const account = await shared.account(name, 0);
    if (account !== undefined) records[name] = { kind: kind as WalletKind, createdAt: new Date().toISOString(), accounts: { '0': account.address } };
  }
  const clash = Object.keys(records).filter((name) => session.profile().wallets[name] !== undefined);
  if (clash.length > 0) {
    throw new NanoPayError('CONFLICT', `Profile "${session.profileName}" already has wallets named ${clash.join(', ')}`, { hint: 'Attach the session in a profile of its own: nanopay wallet attach SOCKET --profile NAME.' });
  }
  const profile = session.updateProfile((p) => ({
    ...p,
    sessionSocket: socket,
    wallets: { ...p.wallets, ...records },
    ...(p.activeWallet === undefined && Object.keys(records).length > 0 ? { activeWallet: Object.keys(records)[0] as string, activeAccount: 0 } : {}),
  }));
  return { profile: session.profileName, socket, scope: shared.scope, wallets: Object.keys(records).map((name) => summary(session, name, profile.wallets[name] as WalletRecord)) };
}
