import { NanoPayError } from '../../errors.js';
import { hashBlock, isValidAddress, linkAsAccount, normalizeAddress, rawToXno, xnoToRaw, type StateBlock } from '../../nano/index.js';
import { move } from '../../ops/spending/movement.js';
import { seenConfirmed } from '../../ops/ledger/confirmed-wait.js';
import type { Session } from '../../ops/session.js';
import { answeredWithin, boundedWork, confirmedHead, maximum, payerNetwork, statedThreshold, x402Spend } from '../client.js';
import type { Transport } from '../local-hosts.js';
import { X402_ASSET, X402_VERSION, type PaymentRequirements } from '../protocol.js';
import { SESSION_SCHEME, newSessionKey, openMessage } from './wire.js';
import { buyerSessions, liveOf, resync, save, standingOf, type BuyerSession, type SessionFetchOptions } from './buyer-book.js';
/** The session offer in a 402 this wallet can take: on its network, in XNO, to a Nano address, within the maximum a call. */
export function sessionOffer(accepts: readonly PaymentRequirements[], network: string, maxRaw: bigint): PaymentRequirements | undefined {
  return accepts.find((a) => a.scheme === SESSION_SCHEME && a.network === network && a.asset === X402_ASSET && isValidAddress(a.payTo) && BigInt(a.amount) > 0n && BigInt(a.amount) <= maxRaw && typeof a.extra?.sessions === 'string');
}

/**
 * Opens a session on `offer`: a new session key, its seed saved with the
 * signed deposit before the deposit leaves (a crash after it leaves can still
 * use, close or get back the session), the deposit sent through the one
 * guarded money path (policy, approvals, journal) and presented with the
 * account's signature binding the session key. Counted paid only once our
 * own ledger shows the deposit confirmed.
 */
export async function openSession(session: Session, url: string, offer: PaymentRequirements, options: SessionFetchOptions, transport: Transport): Promise<BuyerSession> {
  const extra = offer.extra ?? {};
  const sessionsUrl = String(extra.sessions);
  // An HTTP seller's endpoint is on the origin asked; an MCP server (url: mcp:SERVER/TOOL) names its own.
  if (!URL.canParse(sessionsUrl) || !/^https?:$/.test(new URL(sessionsUrl).protocol) || (!url.startsWith('mcp:') && new URL(sessionsUrl).origin !== new URL(url).origin)) {
    throw new NanoPayError('X402_UNPAYABLE', `The server's session endpoint ${sessionsUrl} is not on ${url.startsWith('mcp:') ? 'http(s)' : new URL(url).origin}; nothing was paid`);
  }
  const least = typeof extra.minDeposit === 'string' && /^\d+$/.test(extra.minDeposit) ? BigInt(extra.minDeposit) : BigInt(offer.amount);
  const depositRaw = options.depositXno === undefined ? least : xnoToRaw(options.depositXno);
  if (depositRaw < least) throw new NanoPayError('X402_UNPAYABLE', `The server's least session deposit is ${rawToXno(least)} XNO; ${rawToXno(depositRaw)} XNO was asked; nothing was paid`);
  const ctx = boundedWork(await session.context(options.signal), session.workBoundMs());
  const signer = await session.account(options.wallet, options.index);
  const key = newSessionKey();
  const threshold = statedThreshold(offer);
  const depositRequirement: PaymentRequirements = { ...offer, amount: depositRaw.toString() };
  let opened: BuyerSession | undefined;
  await move(ctx, {
    signer,
    to: offer.payTo,
    amountRaw: depositRaw,
    note: { chequeFor: sessionsUrl },
    spend: x402Spend(url, depositRequirement, options.approval, undefined),
    ...(threshold === undefined ? {} : { workThreshold: threshold }),
    readHead: confirmedHead(ctx, signer.address, 15_000, options.signal),
    ...(options.confirm === undefined ? {} : { confirm: options.confirm }),
    submit: async (block) => {
      const id = hashBlock(block);
      const { signature } = await session.signSessionMessage(openMessage(offer.network, offer.payTo, id, key.publicKey), options.wallet, options.index);
      const s: BuyerSession = {
        id,
        sessionsUrl,
        origin: new URL(sessionsUrl).origin,
        network: offer.network,
        payTo: normalizeAddress(offer.payTo),
        payer: signer.address,
        ...(options.wallet === undefined ? {} : { wallet: options.wallet }),
        ...(options.index === undefined ? {} : { index: options.index }),
        seed: key.seed,
        sessionKey: key.publicKey,
        requirement: offer,
        block,
        openSignature: signature,
        depositRaw: depositRaw.toString(),
        openingRaw: depositRaw.toString(),
        allowedRaw: '0',
        chargedRaw: '0',
        counter: 0,
        prices: {},
        state: 'opening',
        openedAt: new Date().toISOString(),
      };
      await save(session, s);
      await presentDeposit(ctx.api, s, block, depositRaw, transport, { sessionKey: key.publicKey, signature });
      s.state = 'open';
      await save(session, s);
      opened = s;
    },
  });
  if (opened === undefined) throw new NanoPayError('INTERNAL_ERROR', 'The session deposit was not presented');
  return opened;
}

/**
 * Tops up an open session whose deposit is spent: another deposit of the
 * same amount as the first (or --session-deposit), through the same guarded
 * path, presented to the session's top-up endpoint.
 */
export async function topUp(session: Session, s: BuyerSession, options: SessionFetchOptions, url: string, transport: Transport): Promise<void> {
  const raw = options.depositXno === undefined ? BigInt(s.openingRaw ?? s.depositRaw) : xnoToRaw(options.depositXno);
  const ctx = boundedWork(await session.context(options.signal), session.workBoundMs());
  const signer = await session.account(s.wallet, s.index);
  const threshold = statedThreshold(s.requirement);
  await move(ctx, {
    signer,
    to: s.payTo,
    amountRaw: raw,
    note: { chequeFor: `${s.sessionsUrl}/${s.id}/deposit` },
    spend: x402Spend(url, { ...s.requirement, amount: raw.toString() }, options.approval, undefined),
    ...(threshold === undefined ? {} : { workThreshold: threshold }),
    readHead: confirmedHead(ctx, signer.address, 15_000, options.signal),
    ...(options.confirm === undefined ? {} : { confirm: options.confirm }),
    submit: async (block) => {
      await presentDeposit(ctx.api, s, block, raw, transport);
      s.depositRaw = (BigInt(s.depositRaw) + raw).toString();
      await save(session, s);
    },
  });
}

/** Presents a deposit (an opening, or a top-up of `s`) and waits for our ledger to show it confirmed. */
async function presentDeposit(api: Awaited<ReturnType<Session['api']>>, s: BuyerSession, block: StateBlock, raw: bigint, transport: Transport, opening?: { sessionKey: string; signature: string }): Promise<void> {
  const hash = hashBlock(block);
  const payload = { x402Version: X402_VERSION, accepted: s.requirement, payload: { block: { ...block, link_as_account: linkAsAccount(block.link) }, deposit: raw.toString(), ...(opening ?? {}) } };
  const target = opening === undefined ? `${s.sessionsUrl}/${s.id}/deposit` : s.sessionsUrl;
  const response = await transport(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload), redirect: 'manual' }).catch((error: unknown) => {
    throw new NanoPayError('X402_UNSETTLED', `Presenting the session deposit ${hash} failed (${error instanceof Error ? error.message : String(error)}); it is outstanding`, {
      hint: 'nanopay sessions resumes it; the seller refunds a session that sits idle.',
    });
  });
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!(await seenConfirmed(api, hash, response.ok ? 15_000 : 0))) {
    throw new NanoPayError('X402_UNSETTLED', `The seller answered HTTP ${response.status}${typeof body.error === 'string' ? ` (${body.error}: ${String(body.message)})` : ''}, and our ledger does not show the deposit ${hash} confirmed; nothing more was paid`, {
      hint: 'The block is an outstanding cheque: the account\'s next block cancels it, or it lands and the seller refunds the idle session.',
    });
  }
  if (!response.ok || body.session !== s.id) throw new NanoPayError('X402_UNSETTLED', `The deposit ${hash} is confirmed, but the seller answered HTTP ${response.status} without the session; nanopay sessions close ${s.id} asks for it back`);
}

/**
 * The session an MCP tool call is paid in: ours with that seller's session
 * endpoint, else a new one (its deposit judged by the policy as a payment to
 * `identity`, mcp:SERVER/TOOL). Undefined when the tool offers none this
 * wallet can take.
 */
export async function toolSession(session: Session, accepts: readonly PaymentRequirements[], identity: string, options: SessionFetchOptions): Promise<{ s: BuyerSession; offer: PaymentRequirements; opened: boolean } | undefined> {
  const transport = answeredWithin(options.transport ?? fetch, session.deadlineMs());
  const offer = sessionOffer(accepts, await payerNetwork(session, await session.context(options.signal)), maximum(session, options.maxXno));
  if (offer === undefined || !URL.canParse(String(offer.extra?.sessions))) return undefined;
  const found = await sessionFor(session, new URL(String(offer.extra?.sessions)).origin, offer, transport);
  return found === undefined ? { s: await openSession(session, identity, offer, options, transport), offer, opened: true } : { s: found, offer, opened: false };
}

/** An open session of ours with this seller: in this process, else on disk (its standing asked of the seller). */
export async function sessionFor(session: Session, origin: string, offer: PaymentRequirements, transport: Transport): Promise<BuyerSession | undefined> {
  const payTo = normalizeAddress(offer.payTo);
  const held = [...liveOf(session).values()].map((e) => e.s).find((s) => s.origin === origin && s.payTo === payTo && s.network === offer.network && s.state === 'open');
  if (held !== undefined) return held;
  for (const s of await buyerSessions(session)) {
    if (s.origin !== origin || s.payTo !== payTo || s.network !== offer.network || s.state === 'closed') continue;
    let standing = await standingOf(s, transport).catch(() => undefined);
    if (standing === undefined && s.state === 'opening') standing = await resumeOpening(session, s, transport);
    if (standing === undefined) continue;
    resync(s, standing);
    if (s.state !== 'open') {
      await save(session, s);
      continue;
    }
    liveOf(session).set(s.id, { s, turn: Promise.resolve() });
    return s;
  }
  return undefined;
}

/**
 * An opening whose answer this profile never got (the process died): the
 * same deposit block and signature presented again, which the seller
 * answers with the same session. One the ledger never took (cancelled by the
 * account's next block) is marked closed: nothing was spent.
 */
async function resumeOpening(session: Session, s: BuyerSession, transport: Transport): Promise<Record<string, unknown> | undefined> {
  if (s.openSignature === undefined) return undefined;
  try {
    await presentDeposit(await session.api(), s, s.block, BigInt(s.depositRaw), transport, { sessionKey: s.sessionKey, signature: s.openSignature });
  } catch (error) {
    if (!(error instanceof NanoPayError) || error.code !== 'X402_UNSETTLED') throw error;
    if (await session.api().then((api) => api.blockInfo(s.id)).then(() => false, () => true)) {
      s.state = 'closed';
      await save(session, s);
    }
    return undefined;
  }
  s.state = 'open';
  await save(session, s);
  return standingOf(s, transport);
}

