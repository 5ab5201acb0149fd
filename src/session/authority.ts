import { NanoPayError } from '../errors.js';
import { ZERO_HASH, addressToPublicKey, hashBlock, linkAsAccount, type StateBlock } from '../nano/index.js';
import { admitSpend, decideSpend, refused, screenSpend, type Judge } from '../ops/spending/decide.js';
import { judgedAs, profilePolicy, stricter, type CountedSpend, type SessionScope, type Verdict } from '../ops/spending/policy.js';
import type { SpendingStatus, SpendRequest } from '../ops/spending/request.js';
import { summarizeSpending } from '../ops/spending/status.js';
import { policySealHolds, policyTampered } from '../ops/spending/seal.js';
import { withSpendingLock } from '../ops/spending/spend-log.js';
import type { Store } from '../store/store.js';
import type { ConfigStore } from '../wallet/config.js';
import type { SessionGrant } from '../wallet/unlocked.js';

/** A send this session signed: it counts for the session's whole life, whatever the store says. */
interface Signed extends CountedSpend {
  hash: string;
  account: string;
  previous: string;
}

/** The longest window a budget looks back over: what the session keeps of what it signed. */
const KEPT_MS = 30 * 24 * 60 * 60_000;

/** What a block does to its account, read from its balance and the balance of the block before it. */
type BlockEffect = { spend: false } | { spend: true; to: string; amountRaw: bigint };

function refuse(message: string): NanoPayError {
  return new NanoPayError('INVALID_REQUEST', `The unlocked session refuses to sign: ${message}; nothing was signed`);
}

/**
 * What a block would do, proved from the blocks themselves: a block that
 * lowers the balance of the one before it is a send of the difference to its
 * link. The block before it must be shown in full and hash to the new block's
 * `previous` (then its balance is the ledger's, or the new block can never
 * land). An account's first block spends nothing.
 */
function blockEffect(account: string, block: StateBlock, previous: StateBlock | undefined): BlockEffect {
  if (addressToPublicKey(block.account) !== addressToPublicKey(account)) throw refuse(`the block is of ${block.account}, not of ${account}`);
  if (block.previous.toUpperCase() === ZERO_HASH) return { spend: false };
  if (previous === undefined) throw refuse('it was not shown the block before this one (previous)');
  if (hashBlock(previous) !== block.previous.toUpperCase()) throw refuse('the block shown as previous does not hash to the new block\'s previous');
  if (addressToPublicKey(previous.account) !== addressToPublicKey(account)) throw refuse('the block shown as previous is of another account');
  const before = BigInt(previous.balance);
  const after = BigInt(block.balance);
  return after >= before ? { spend: false } : { spend: true, to: linkAsAccount(block.link), amountRaw: before - after };
}

/**
 * The spending authority of an unlocked session: it judges every spend it is
 * asked about or asked to sign by the scope it was granted at unlock (a front
 * end, or all), whatever the caller says it is, with the policy it was given
 * then and every stricter rule sealed since; a policy whose seal fails stops
 * every spend. It records its decisions in the profile's store, and counts
 * what it signed from its own memory as well, so a store emptied under it
 * gives no room back. It never approves: an approval must carry a person's
 * seal, and is used once.
 */
export class SessionAuthority {
  private readonly signed: Signed[] = [];
  private readonly usedApprovals = new Set<string>();

  constructor(
    private readonly profile: string,
    private readonly grant: SessionGrant,
    private readonly store: Store,
    private readonly config: ConfigStore,
    private readonly lock: <T>(name: string, fn: () => Promise<T>) => Promise<T>,
  ) {}

  /** Approvals already used, as the store says at start: never used again through this session. */
  async remember(): Promise<void> {
    for (const approval of await this.store.approvals.list(this.profile, Date.now(), true)) if (approval.state === 'used') this.usedApprovals.add(approval.id);
  }

  private key(): Buffer {
    return Buffer.from(this.grant.sealKey, 'hex');
  }

  /** The judge of one request: the profile's policy as it stands now, checked against its seal, and the grant's, both holding. */
  private judge(): Judge {
    const key = this.key();
    const profile = this.config.profile(this.profile);
    const sealed = Object.keys(profile.wallets).length === 0 || policySealHolds(key, this.profile, profile);
    return {
      profile: this.profile,
      frontEnd: judgedAs(this.grant.scope as SessionScope),
      policy: sealed ? stricter(this.grant.policy, profilePolicy(profile)) : this.grant.policy,
      now: Date.now,
      store: async () => this.store,
      contacts: async () => ({ ...(sealed ? profile.policyContacts : {}), ...this.grant.contacts }),
      counted: async (sinceMs) => this.counted(sinceMs),
      sealKey: async () => {
        if (!sealed) throw policyTampered(this.profile, profile);
        return key;
      },
      session: this.grant.scope,
    };
  }

  /**
   * The spends that count: the store's, and every send this session signed
   * (among its blocks on the same previous only one can land: the largest
   * counts), even where the store lost or changed their record.
   */
  private async counted(sinceMs: number): Promise<CountedSpend[]> {
    const own = new Map<string, Signed>();
    for (const s of this.signed) {
      if (s.at <= sinceMs) continue;
      const key = `${s.account} ${s.previous}`;
      const known = own.get(key);
      if (known === undefined || known.amountRaw < s.amountRaw) own.set(key, s);
    }
    const mine = new Set(this.signed.map((s) => s.hash));
    const rows = (await this.store.audit.counted(this.profile, sinceMs)).filter((r) => r.hash === undefined || !mine.has(r.hash));
    return [
      ...rows.map((r) => ({ to: r.recipient, ...(r.host === undefined ? {} : { host: r.host }), frontEnd: r.front_end, kind: r.kind, amountRaw: BigInt(r.amount_raw), at: Date.parse(r.at), attended: r.decision === 'approved' })),
      ...own.values(),
    ];
  }

  /** An approval this session saw used is never used again, whatever the store now says of it (recorded unless a dry run). */
  private async checkApproval(judge: Judge, spend: SpendRequest, record: boolean): Promise<void> {
    if (spend.approvalId === undefined || !this.usedApprovals.has(spend.approvalId)) return;
    const error = new NanoPayError('APPROVAL_INVALID', `The approval ${spend.approvalId} was used already through this session: an approval pays one spend once; nothing was signed`);
    if (record) await refused(judge, spend, error);
    throw error;
  }

  /** What the scope still lets a caller spend, and what waits for a person. */
  status(): Promise<SpendingStatus> {
    return summarizeSpending(this.judge());
  }

  /** What the scope says of a spend before anything is signed: `dry` records nothing; `screen` records a refusal or holds it for a person. */
  async judgeSpend(spend: SpendRequest, mode: 'dry' | 'screen'): Promise<Verdict> {
    const judge = this.judge();
    await this.checkApproval(judge, spend, mode === 'screen');
    if (mode === 'screen') {
      await screenSpend(judge, spend);
      return { outcome: 'allow' };
    }
    const { verdict, approval } = await decideSpend(judge, spend);
    return verdict.outcome === 'ask' && approval !== undefined ? { outcome: 'allow' } : verdict;
  }

  /**
   * Admits a block before the session signs it: no spend (a receive, a
   * change, an account's first block, a send to another account of the same
   * wallet: `own`) passes; a send is judged again holding the profile's
   * spending lock, recorded in flight with its hash, its approval used, and
   * kept in the session's memory. A refusal throws: nothing is signed.
   */
  async admitBlock(account: string, block: StateBlock, previous: StateBlock | undefined, claim: SpendRequest | undefined, own: string | undefined): Promise<void> {
    let effect: BlockEffect;
    try {
      effect = blockEffect(account, block, previous);
    } catch (error) {
      // A block it cannot read the effect of is refused, and recorded: whoever asked may be trying something.
      await refused(this.judge(), { kind: 'send', ...claim, account, to: linkAsAccount(block.link), amountRaw: 0n }, error);
      throw error;
    }
    if (!effect.spend) return;
    if (own !== undefined) {
      if (addressToPublicKey(own) === addressToPublicKey(effect.to)) return;
      throw refuse(`the send goes to ${effect.to}, not to the wallet's own account ${own}`);
    }
    const spend: SpendRequest = { kind: 'send', ...claim, account, to: effect.to, amountRaw: effect.amountRaw };
    const hash = hashBlock(block);
    await withSpendingLock({ lock: this.lock, profile: this.profile }, async () => {
      const judge = this.judge();
      await this.checkApproval(judge, spend, true);
      await admitSpend(judge, spend, hash);
      const at = Date.now();
      this.signed.push({ hash, account, previous: block.previous.toUpperCase(), to: spend.to, ...(spend.host === undefined ? {} : { host: spend.host }), frontEnd: judgedAs(this.grant.scope as SessionScope), kind: spend.kind, amountRaw: spend.amountRaw, at, attended: spend.approvalId !== undefined });
      if (spend.approvalId !== undefined) this.usedApprovals.add(spend.approvalId);
      while (this.signed.length > 0 && (this.signed[0] as Signed).at < at - KEPT_MS) this.signed.shift();
    });
  }
}
