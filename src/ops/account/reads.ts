import { normalizeAddress, parseHash, rawToXno } from '../../nano/index.js';
import { serviceThresholds } from '../ledger/chain.js';
import type { Session } from '../session.js';

async function addressOrActive(session: Session, address?: string): Promise<string> {
  return address === undefined ? session.address() : normalizeAddress(address);
}

export async function pending(session: Session, input: { address?: string } = {}): Promise<{ account: string; blocks: { hash: string; amount: string; amount_raw: string; source: string }[] }> {
  const address = await addressOrActive(session, input.address);
  const api = await session.api();
  const hashes = await api.pending(address);
  const blocks = [];
  for (const hash of hashes) {
    const info = await api.blockInfo(hash);
    blocks.push({ hash, amount: rawToXno(info.amountRaw), amount_raw: info.amountRaw.toString(), source: info.account });
  }
  return { account: address, blocks };
}

export async function accountInfo(session: Session, input: { address?: string } = {}) {
  const address = await addressOrActive(session, input.address);
  const info = await (await session.api()).accountInfo(address);
  if (info === null) return { account: address, opened: false as const };
  return {
    account: address,
    opened: true as const,
    frontier: info.frontier,
    balance: rawToXno(info.balanceRaw),
    balance_raw: info.balanceRaw.toString(),
    representative: info.representative,
    ...(info.difficultySend === undefined ? {} : { difficulty_send: info.difficultySend }),
    ...(info.difficultyReceive === undefined ? {} : { difficulty_receive: info.difficultyReceive }),
  };
}

export async function blockInfo(session: Session, input: { hash: string }) {
  const hash = parseHash(input.hash, 'Block hash');
  const info = await (await session.api()).blockInfo(hash);
  return {
    hash: info.hash,
    account: info.account,
    subtype: info.subtype,
    amount: rawToXno(info.amountRaw),
    amount_raw: info.amountRaw.toString(),
    balance: rawToXno(info.balanceRaw),
    balance_raw: info.balanceRaw.toString(),
    contents: info.contents,
  };
}

export async function networkDifficulty(session: Session) {
  const { thresholds, reported } = await serviceThresholds(await session.api(), false);
  return { ...thresholds, reported };
}
