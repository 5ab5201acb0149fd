import { NanoPayError } from '../../errors.js';
import { LANE_BASE, type LaneSettings, type WalletRecord } from '../../wallet/config.js';
import type { Signer } from '../context.js';
import type { Session } from '../session.js';

/** The most lanes a wallet keeps. */
export const MAX_LANES = 64;

/** One lane: its number in the pool, its account index in the wallet, its address. */
export interface Lane {
  number: number;
  index: number;
  address: string;
}

/** A wallet's lanes as its settings say. */
export interface LaneSet {
  wallet: string;
  record: WalletRecord;
  settings: LaneSettings;
  lanes: Lane[];
}

/** The lanes of a wallet (the active one unless named), or undefined when it has none. */
export function lanesOf(session: Session, wallet?: string): LaneSet | undefined {
  const profile = session.profile();
  const name = wallet ?? profile.activeWallet;
  const record = name === undefined ? undefined : profile.wallets[name];
  const settings = record?.lanes;
  if (name === undefined || record === undefined || settings === undefined || settings.count === 0) return undefined;
  const lanes = Array.from({ length: settings.count }, (_, number) => ({ number, index: LANE_BASE + number, address: settings.accounts[String(number)] as string }));
  if (lanes.some((l) => l.address === undefined)) throw new NanoPayError('STORE_CORRUPT', `The lanes of wallet "${name}" in the settings file lack an address`, { hint: 'Run nanopay lanes set again to rebuild them.' });
  return { wallet: name, record, settings, lanes };
}

/** Derived signers of lanes and of their funding accounts, made once per session (deriving needs the key store or the unlocked session). */
const signers = new WeakMap<Session, Map<string, Promise<Signer>>>();

function derived(session: Session, set: LaneSet, index: number, check: (s: Signer) => Signer = (s) => s): Promise<Signer> {
  let mine = signers.get(session);
  if (mine === undefined) signers.set(session, (mine = new Map()));
  const key = `${set.wallet}/${index}`;
  let signer = mine.get(key);
  if (signer === undefined) {
    signer = session.derive(set.wallet, set.record, index).then(check);
    signer.catch(() => mine.delete(key));
    mine.set(key, signer);
  }
  return signer;
}

/** The signer of a lane of `set`, checked against the address its settings hold. */
export function laneSigner(session: Session, set: LaneSet, lane: Lane): Promise<Signer> {
  return derived(session, set, lane.index, (s) => {
    if (s.address !== lane.address) throw new NanoPayError('STORE_CORRUPT', `Lane ${lane.number} of wallet "${set.wallet}" derives ${s.address}, but the settings name ${lane.address}`, { hint: 'Run nanopay lanes set again to rebuild them.' });
    return s;
  });
}

/** The account that funds the lanes of `set` (and that approvals of their payments are bound to). */
export function fundingSigner(session: Session, set: LaneSet): Promise<Signer> {
  return derived(session, set, set.settings.from);
}
