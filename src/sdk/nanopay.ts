import { balance, type BalanceResult } from '../ops/balance.js';
import { credits, topup, type CreditsResult, type TopupResult } from '../ops/credits.js';
import { donate, type DonateResult } from '../ops/donate.js';
import { payUri, paymentStatus, requestPayment, watchPayment, type PaymentRequestResult, type PaymentStatusResult } from '../ops/payments.js';
import { receive, type ReceiveResult } from '../ops/receive.js';
import { send, type SendResult } from '../ops/send.js';
import { Session, type SessionOptions } from '../ops/session.js';
import { createWallet, importWallet, listWallets, type CreatedWallet, type ImportInput, type WalletSummary } from '../ops/wallet.js';

export interface NanoPayOptions {
  /** The key store password, or a function that returns it. */
  password: string | (() => Promise<string>);
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
      password: typeof password === 'string' ? () => Promise.resolve(password) : password,
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

  receive(): Promise<ReceiveResult> {
    return receive(this.session);
  }

  send(to: string, amountXno: string, options: { id?: string; dryRun?: boolean } = {}): Promise<SendResult> {
    return send(this.session, { to, amount: { xno: amountXno }, ...options });
  }

  sendRaw(to: string, amountRaw: bigint | string, options: { id?: string; dryRun?: boolean } = {}): Promise<SendResult> {
    return send(this.session, { to, amount: { raw: amountRaw }, ...options });
  }

  pay(uri: string, options: { id?: string; dryRun?: boolean } = {}): Promise<SendResult & { uri: string }> {
    return payUri(this.session, uri, options);
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

  topup(tier: number): Promise<TopupResult> {
    return topup(this.session, { tier });
  }

  donate(amountXno: string): Promise<DonateResult> {
    return donate(this.session, { amount: { xno: amountXno } });
  }
}
