import { NanoPayError } from '../../errors.js';
import { normalizeAddress, rawToXno } from '../../nano/index.js';
import { receive, type ReceivedItem } from './receive.js';
import type { Session } from '../session.js';

export interface BalanceInput {
  /** Any account; the active one when absent. */
  address?: string;
  wallet?: string;
  index?: number;
  /** Receive every pending block first (the SDK's auto_receive_pending_blocks). */
  receive?: boolean;
  signal?: AbortSignal;
}

export interface BalanceResult {
  account: string;
  balance: string;
  balance_raw: string;
  pending: string;
  pending_raw: string;
  received?: ReceivedItem[];
}

export async function balance(session: Session, input: BalanceInput = {}): Promise<BalanceResult> {
  let received: ReceivedItem[] | undefined;
  let address: string;
  if (input.receive) {
    if (input.address !== undefined) {
      throw new NanoPayError('USAGE', 'Only your own account can receive: drop the address, or name the account with --wallet/--account');
    }
    const result = await receive(session, input);
    received = result.received;
    address = result.account;
  } else {
    address = input.address === undefined ? await session.address(input.wallet, input.index) : normalizeAddress(input.address);
  }
  const remote = await (await session.api()).balance(address);
  return {
    account: address,
    balance: rawToXno(remote.balanceRaw),
    balance_raw: remote.balanceRaw.toString(),
    pending: rawToXno(remote.pendingRaw),
    pending_raw: remote.pendingRaw.toString(),
    ...(received === undefined ? {} : { received }),
  };
}
