import { NanoPayError } from '../../errors.js';
import { normalizeAddress } from '../../nano/index.js';
import type { ContactRecord } from '../../wallet/contacts.js';
import type { Session } from '../session.js';

export interface Contact {
  name: string;
  address: string;
  added_at: string;
  changed_at?: string;
}

/** What `contacts add` of a name that exists with another address would change. */
export interface ContactChange {
  name: string;
  from: string;
  to: string;
}

export interface ContactAdded extends Contact {
  /** added: a new name; unchanged: the same address again; changed: a confirmed new address. */
  status: 'added' | 'unchanged' | 'changed';
  previous_address?: string;
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,31}$/;

/**
 * A contact name as stored: an optional leading @ dropped, lower case; 1 to 32
 * letters, digits, dots, dashes and underscores, starting with a letter or
 * digit. A name that reads like an address is refused: @NAME must never be
 * mistaken for one.
 */
function contactName(input: string): string {
  const name = (input.startsWith('@') ? input.slice(1) : input).toLowerCase();
  if (!NAME.test(name) || /^(nano|xrb)_/.test(name)) {
    throw new NanoPayError('INVALID_CONTACT_NAME', `"${input}" is not a contact name: use 1 to 32 letters, digits, ".", "-" or "_", starting with a letter or digit, and not nano_ or xrb_`);
  }
  return name;
}

/**
 * Adds a contact. A name that exists with another address is changed only
 * when `confirm` agrees, after it is told exactly what changes; without
 * `confirm` that is refused (CONTACT_CHANGED) and nothing changes.
 */
export async function addContact(session: Session, input: { name: string; address: string; confirm?: (change: ContactChange) => Promise<boolean> }): Promise<ContactAdded> {
  const name = contactName(input.name);
  const address = normalizeAddress(input.address);
  const existing = (await session.contacts.all())[name];
  if (existing !== undefined && existing.address !== address) {
    const change = { name, from: existing.address, to: address };
    if (input.confirm === undefined) {
      throw new NanoPayError('CONTACT_CHANGED', `The contact @${name} is ${existing.address}; adding it with ${address} would change where @${name} pays. Nothing was changed`, {
        hint: 'If the new address is right, confirm: on a terminal, or with --yes.',
      });
    }
    if (!(await input.confirm(change))) throw new NanoPayError('CANCELLED', `Cancelled; @${name} is still ${existing.address}`);
  }
  const now = new Date().toISOString();
  return session.contacts.update((contacts) => {
    const current = contacts[name];
    // Checked again under the lock: the address confirmed is the one replaced.
    if (current !== undefined && current.address !== address && current.address !== existing?.address) {
      throw new NanoPayError('CONTACT_CHANGED', `The contact @${name} changed to ${current.address} meanwhile; nothing was changed`, { hint: 'Run contacts add again to see what would change.' });
    }
    if (current?.address === address) return { ...view(name, current), status: 'unchanged' as const };
    contacts[name] = current === undefined ? { address, addedAt: now } : { address, addedAt: current.addedAt, changedAt: now };
    const added = { ...view(name, contacts[name]), status: current === undefined ? ('added' as const) : ('changed' as const) };
    return current === undefined ? added : { ...added, previous_address: current.address };
  });
}

function view(name: string, record: { address: string; addedAt: string; changedAt?: string }): Contact {
  return { name, address: record.address, added_at: record.addedAt, ...(record.changedAt === undefined ? {} : { changed_at: record.changedAt }) };
}

export async function listContacts(session: Session): Promise<{ contacts: Contact[] }> {
  const all = await session.contacts.all();
  return { contacts: Object.keys(all).sort().map((name) => view(name, all[name] as ContactRecord)) };
}

export async function removeContact(session: Session, input: { name: string }): Promise<{ removed: Contact }> {
  const name = contactName(input.name);
  return session.contacts.update((contacts) => {
    const record = contacts[name];
    if (record === undefined) throw new NanoPayError('NOT_FOUND', `There is no contact @${name}`, { hint: 'See them with: nanopay contacts list' });
    delete contacts[name];
    return { removed: view(name, record) };
  });
}

/**
 * A recipient as given: `@NAME` is the contact's address, anything else must
 * be an address (named by its contact when it is one, so a payment to a URI
 * or an address shows whose it is).
 */
export async function resolveRecipient(session: Session, to: string): Promise<{ address: string; contact?: string }> {
  if (!to.startsWith('@')) {
    const address = normalizeAddress(to);
    const all = await session.contacts.all();
    const contact = Object.keys(all)
      .sort()
      .find((name) => all[name]?.address === address);
    return contact === undefined ? { address } : { address, contact };
  }
  const name = contactName(to);
  const record = (await session.contacts.all())[name];
  if (record === undefined) {
    throw new NanoPayError('NOT_FOUND', `There is no contact @${name}; nothing was sent`, { hint: `Add it with: nanopay contacts add ${name} nano_…` });
  }
  return { address: record.address, contact: name };
}
