import { NanoPayError } from '../../errors.js';
import type { Role } from '../../shop/roles.js';
import type { OperatorRecord } from '../../store/access.js';
import type { Store } from '../../store/store.js';
import { checkName, checkRole } from './keys.js';
import { hashPassword } from './secrets.js';

/** The shortest operator password: a dashboard may face the network, and its sign-in is throttled, not unguessable. */
export const MIN_OPERATOR_PASSWORD = 12;
const MAX_OPERATOR_PASSWORD = 1024;

export interface OperatorShown {
  name: string;
  role: Role;
  created_at: string;
  password_changed_at: string;
}

const shown = ({ password: _password, ...rest }: OperatorRecord): OperatorShown => rest;

export function checkOperatorPassword(password: string): string {
  if (password.length < MIN_OPERATOR_PASSWORD) throw new NanoPayError('USAGE', `An operator's password has at least ${MIN_OPERATOR_PASSWORD} characters`);
  if (password.length > MAX_OPERATOR_PASSWORD) throw new NanoPayError('USAGE', `An operator's password has at most ${MAX_OPERATOR_PASSWORD} characters`);
  return password;
}

/** Adds an operator of the dashboard (with `replace`, replaces it: its sessions end). */
export async function addOperator(store: Store, input: { name: string; role: string; password: string; replace?: boolean; now?: Date }): Promise<OperatorShown> {
  const at = (input.now ?? new Date()).toISOString();
  const name = checkName(input.name, 'operator');
  const role = checkRole(input.role);
  const before = input.replace === true ? await store.access.operator(name) : undefined;
  const operator: OperatorRecord = { name, role, password: await hashPassword(checkOperatorPassword(input.password)), created_at: before?.created_at ?? at, password_changed_at: at };
  await store.access.putOperator(operator, input.replace === true);
  return shown(operator);
}

/** A new password (the role stays): the operator's sessions end. */
export async function setOperatorPassword(store: Store, name: string, password: string, now = new Date()): Promise<OperatorShown> {
  const before = await requireOperator(store, name);
  const operator: OperatorRecord = { ...before, password: await hashPassword(checkOperatorPassword(password)), password_changed_at: now.toISOString() };
  await store.access.putOperator(operator, true);
  return shown(operator);
}

/** The operator, or NOT_FOUND: asked before a password is typed for it. */
export async function requireOperator(store: Store, name: string): Promise<OperatorRecord> {
  const found = await store.access.operator(name);
  if (found === undefined) throw noOperator(name);
  return found;
}

export async function listOperators(store: Store): Promise<OperatorShown[]> {
  return (await store.access.operators()).map(shown);
}

/** Removes an operator: its sessions end at once. */
export async function removeOperator(store: Store, name: string): Promise<void> {
  if (!(await store.access.removeOperator(name))) throw noOperator(name);
}

function noOperator(name: string): NanoPayError {
  return new NanoPayError('NOT_FOUND', `No operator is named "${name}"`, { hint: 'See them with: nanopay checkout operators list' });
}
