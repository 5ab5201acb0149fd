/** A payment request nanopay keeps itself (node backend): amounts raw, as decimal strings. Kept in the store (src/store/). */
export interface RequestRecord {
  id: string;
  address: string;
  baseRaw: string;
  /** What the payer must send: the base plus this request's offset (the base itself on a fresh address). */
  amountRaw: string;
  createdAt: string;
  expiresAt?: string;
  redirectUrl?: string;
  /** The wallet account derived for this request alone (request --fresh-address). */
  fresh?: { wallet: string; index: number };
  /** The blocks that paid it; set once, never undone. */
  paidBy?: string[];
  /** Those blocks came after expiresAt: reported as a late payment, not counted as paid. */
  paidLate?: boolean;
}
