import { NanoPayError } from '../errors.js';
import { balance, type BalanceResult } from '../ops/account/balance.js';
import { credits, topup, type CreditsResult, type TopupResult } from '../ops/spending/credits.js';
import { donate, type DonateResult } from '../ops/spending/donate.js';
import { payUri, paymentStatus, requestPayment, watchPayment, type PaymentRequestResult, type PaymentStatusResult } from '../ops/requests/payments.js';
import { receive, type ReceiveResult } from '../ops/account/receive.js';
import { history, historyStream, type HistoryResult, type HistoryStream } from '../ops/account/history.js';
import { setRepresentative, showRepresentative, type RepresentativeChanged, type RepresentativeShown } from '../ops/account/representative.js';
import { addContact, listContacts, removeContact, type Contact, type ContactAdded } from '../ops/profile/contacts.js';
import { send, type SendResult } from '../ops/spending/send.js';
import { Session, type SessionOptions } from '../ops/session.js';
import { fetchWithPayment, type PaidFetch, type PaidFetchOptions } from '../x402/client.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { callToolPaying, type PaidToolCall, type ToolPayOptions } from '../x402/mcp/tool-buyer.js';
import { fetchInSession } from '../x402/sessions/buyer.js';
import { buyerSessions, shownSession, type SessionFetch, type SessionFetchOptions, type SessionShown } from '../x402/sessions/buyer-book.js';
import { closeSession, type ClosedSession } from '../x402/sessions/buyer-close.js';
import { quoteX402, type X402Quote } from '../x402/quote.js';
import { lanesIdle } from '../ops/lanes/keeper.js';
import { setLanes, showLanes, type LanesResult, type LanesSetResult } from '../ops/lanes/lanes.js';
import { parseNetwork } from '../x402/network.js';
import { profileSettler } from '../x402/profile-settler.js';
import { x402Middleware, type RequestPrice, type X402Middleware } from '../x402/middleware.js';
import { Paywall, type SettleOrder } from '../x402/paywall.js';
import { createWallet, importWallet, listWallets, type CreatedWallet, type ImportInput, type WalletSummary } from '../ops/profile/wallet.js';

/** Which wallet and account pay (or receive), like the CLI's --wallet and --account; the active ones by default. */
export interface FromAccount {
  wallet?: string;
  account?: number;
}

export interface SpendOptions extends FromAccount {
  /** Idempotency key, like --id. */
  id?: string;
  dryRun?: boolean;
  /** The id of an approval a person gave for this very spend (an APPROVAL_REQUIRED error named it), like --approval. */
  approval?: string;
}

function account(from: FromAccount): { wallet?: string; index?: number } {
  return { ...(from.wallet === undefined ? {} : { wallet: from.wallet }), ...(from.account === undefined ? {} : { index: from.account }) };
}

function spend(options: SpendOptions): { wallet?: string; index?: number; id?: string; dryRun?: boolean; approval?: string } {
  return {
    ...account(options),
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(options.dryRun === undefined ? {} : { dryRun: options.dryRun }),
    ...(options.approval === undefined ? {} : { approval: options.approval }),
  };
}

export interface NanoPayOptions {
  /**
   * The key store password, or a function that returns it. Without one, the
   * profile's unlocked session signs (nanopay unlock), judging every spend by
   * the scope it was granted: what to give a program that is an agent.
   */
  password?: string | (() => Promise<string>);
  configDir?: string;
  profile?: string;
  /** Variables as the CLI reads them (NANOPAY_API_URL, NANOPAY_API_KEY, …); process.env by default. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Every operation in-process, configured like the CLI (same config dir,
 * profiles, key store, limits, lock and journal). Amounts are XNO strings, or
 * raw with the `…Raw` variants; results are the CLI's `--json` documents.
 */
export class NanoPay {
  readonly session: Session;

  constructor(options: NanoPayOptions) {
    const password = options.password;
    const sessionOptions: SessionOptions = {
      password:
        typeof password === 'string'
          ? () => Promise.resolve(password)
          : (password ??
            (() =>
              Promise.reject(
                new NanoPayError('PASSWORD_REQUIRED', 'No key store password was given to NanoPay, and no unlocked session of the profile runs', {
                  hint: 'Unlock one (nanopay unlock), or give NanoPay the password.',
                }),
              ))),
      frontEnd: 'sdk',
      ...(options.configDir === undefined ? {} : { configDir: options.configDir }),
      ...(options.profile === undefined ? {} : { profile: options.profile }),
      ...(options.env === undefined ? {} : { env: options.env }),
    };
    this.session = new Session(sessionOptions);
  }

  createWallet(name?: string): Promise<CreatedWallet> {
    return createWallet(this.session, name === undefined ? {} : { name });
  }

  importWallet(input: ImportInput): Promise<CreatedWallet> {
    return importWallet(this.session, input);
  }

  wallets(): WalletSummary[] {
    return listWallets(this.session);
  }

  balance(options: { receive?: boolean; address?: string } = {}): Promise<BalanceResult> {
    return balance(this.session, options);
  }

  receive(from: FromAccount = {}): Promise<ReceiveResult> {
    return receive(this.session, account(from));
  }

  send(to: string, amountXno: string, options: SpendOptions = {}): Promise<SendResult> {
    return send(this.session, { to, amount: { xno: amountXno }, ...spend(options) });
  }

  sendRaw(to: string, amountRaw: bigint | string, options: SpendOptions = {}): Promise<SendResult> {
    return send(this.session, { to, amount: { raw: amountRaw }, ...spend(options) });
  }

  pay(uri: string, options: SpendOptions = {}): Promise<SendResult & { uri: string }> {
    return payUri(this.session, uri, spend(options));
  }

  requestPayment(amountXno: string, options: { to?: string; redirectUrl?: string } = {}): Promise<PaymentRequestResult> {
    return requestPayment(this.session, { amount: { xno: amountXno }, ...options });
  }

  paymentStatus(transactionId: string): Promise<PaymentStatusResult> {
    return paymentStatus(this.session, transactionId);
  }

  waitForPayment(transactionId: string, options: { intervalMs?: number; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<PaymentStatusResult> {
    return watchPayment(this.session, transactionId, { intervalMs: options.intervalMs ?? 2000, ...options });
  }

  credits(): Promise<CreditsResult> {
    return credits(this.session);
  }

  topup(tier: number, from: FromAccount & { approval?: string } = {}): Promise<TopupResult> {
    return topup(this.session, { tier, ...account(from), ...(from.approval === undefined ? {} : { approval: from.approval }) });
  }

  donate(amountXno: string, options: SpendOptions & { to?: string } = {}): Promise<DonateResult> {
    return donate(this.session, { amount: { xno: amountXno }, ...spend(options), ...(options.to === undefined ? {} : { to: options.to }) });
  }

  /**
   * fetch, paying an HTTP 402 (x402 v2) in Nano within `maxXno` (or the
   * profile's x402-max), like `nanopay fetch`: the payment counts only once our
   * backend sees it confirmed, and an unresolved one is never paid twice.
   */
  fetchWithPayment(input: string | URL, init: RequestInit = {}, options: PaidFetchOptions = {}): Promise<PaidFetch> {
    return fetchWithPayment(this.session, input, init, options);
  }

  /**
   * fetch in a Nano session, like `nanopay fetch --session`: where the server
   * offers one, one deposit (`depositXno`, judged by the spending policy) and
   * then a voucher a call, at the speed of an unpaid request; otherwise paid
   * per call as fetchWithPayment does.
   */
  fetchInSession(input: string | URL, init: RequestInit = {}, options: SessionFetchOptions = {}): Promise<SessionFetch> {
    return fetchInSession(this.session, input, init, options);
  }

  /**
   * A fetch function (for code written against fetch, as @x402/fetch's
   * wrapper is) that pays in Nano sessions where offered, per call otherwise:
   * fetchInSession with these options on every call.
   */
  sessionFetch(options: SessionFetchOptions = {}): (input: string | URL, init?: RequestInit) => Promise<Response> {
    return async (input, init = {}) => (await fetchInSession(this.session, input, init, options)).response;
  }

  /** Closes a session, like `nanopay sessions close`: the receipt checked, the refund seen on our ledger and freed in the budgets. */
  closeSession(id: string): Promise<ClosedSession> {
    return closeSession(this.session, id);
  }

  /**
   * Calls a tool of an MCP server through `client` (the official SDK's), paying
   * it if it asks (x402 over MCP, Nano exact) within `maxXno`, like `nanopay mcp
   * connect`: judged by the spending policy as a payment to mcp:SERVER/TOOL.
   */
  callToolPaying(client: Client, server: string, name: string, args: Record<string, unknown> = {}, options: ToolPayOptions = {}): Promise<PaidToolCall> {
    return callToolPaying(this.session, client, server, name, args, options);
  }

  /** The sessions this profile opened, like `nanopay sessions`. */
  async sessions(): Promise<SessionShown[]> {
    return (await buyerSessions(this.session)).map(shownSession);
  }

  /**
   * What a server asks for a request and whether the spending policy would
   * allow paying it, like `nanopay fetch --dry-run`: the request is sent
   * unpaid; nothing is signed, journaled or recorded.
   */
  quote(input: string | URL, init: RequestInit = {}, options: Pick<PaidFetchOptions, 'maxXno' | 'wallet' | 'index' | 'approval' | 'signal'> = {}): Promise<X402Quote> {
    return quoteX402(this.session, input, init, options);
  }

  /**
   * Keeps `count` payment lanes funded with `fund` XNO each, like `nanopay
   * lanes set`: concurrent fetchWithPayment calls (and @x402/fetch with
   * nanoExactClientScheme) then pay in parallel, one cheque per lane.
   */
  setLanes(count: number, options: { fund?: string; wallet?: string } = {}): Promise<LanesSetResult> {
    return setLanes(this.session, { count, ...(options.fund === undefined ? {} : { fundXno: options.fund }), ...(options.wallet === undefined ? {} : { wallet: options.wallet }) });
  }

  /** The wallet's payment lanes, like `nanopay lanes`. */
  lanes(options: { wallet?: string } = {}): Promise<LanesResult> {
    return showLanes(this.session, options);
  }

  /** Resolves when the lanes' background work is done: refills, and cheques handed to @x402/fetch resolved (paid, or cancelled). */
  lanesIdle(): Promise<void> {
    return lanesIdle(this.session);
  }

  /**
   * A node:http / Express-style middleware that charges `price` XNO per request
   * (x402 v2, Nano exact), as `nanopay paywall` does: paid to `payTo` (default:
   * the active account), settled on the profile's backend after the handler
   * answered below 400 for GET and HEAD, before the handler runs for any other
   * method (`settle` names the order for every method), on the backend's
   * network (`network` names it for a node that does not say). It signs nothing.
   */
  async x402Middleware(options: { price: RequestPrice; payTo?: string; description?: string; settle?: SettleOrder; network?: string }): Promise<X402Middleware> {
    const settler = await profileSettler(this.session, options.network === undefined ? {} : { network: parseNetwork(options.network, 'network') });
    const workThreshold = String((await settler.supported()).kinds[0]?.extra?.workThreshold);
    const payTo = options.payTo ?? (await this.session.address());
    return x402Middleware(new Paywall({ payTo, settler, workThreshold, ...(options.description === undefined ? {} : { description: options.description }) }), options.price, options.settle === undefined ? {} : { settle: options.settle });
  }

  /** The newest `limit` (default 20) blocks of the account's history, like `history --json`. */
  history(options: FromAccount & { address?: string; limit?: number } = {}): Promise<HistoryResult> {
    return history(this.session, { ...account(options), ...(options.address === undefined ? {} : { address: options.address }), limit: options.limit ?? 20 });
  }

  /** The whole history as a stream (`items`, newest first), like `history --all --json`. */
  historyStream(options: FromAccount & { address?: string } = {}): Promise<HistoryStream> {
    return historyStream(this.session, { ...account(options), ...(options.address === undefined ? {} : { address: options.address }) });
  }

  /** Names an address, to pay it as `@name`. Changing the address of an existing name needs `{ confirm: true }`. */
  addContact(name: string, address: string, options: { confirm?: boolean } = {}): Promise<ContactAdded> {
    return addContact(this.session, { name, address, ...(options.confirm === true ? { confirm: () => Promise.resolve(true) } : {}) });
  }

  async contacts(): Promise<Contact[]> {
    return (await listContacts(this.session)).contacts;
  }

  async removeContact(name: string): Promise<Contact> {
    return (await removeContact(this.session, { name })).removed;
  }

  representative(options: FromAccount & { address?: string } = {}): Promise<RepresentativeShown> {
    return showRepresentative(this.session, { ...account(options), ...(options.address === undefined ? {} : { address: options.address }) });
  }

  /** Publishes a change block (the profile's representative when none is given), like `representative set --yes`. */
  setRepresentative(representative?: string, from: FromAccount = {}): Promise<RepresentativeChanged> {
    return setRepresentative(this.session, { ...account(from), ...(representative === undefined ? {} : { representative }) });
  }
}
