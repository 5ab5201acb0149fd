/**
 * What an API key or a dashboard operator may do. A role is a set of actions:
 * `read` sees requests, refunds, events and exports; `create` makes requests
 * (and reads them back); `refund` refunds and makes refund claims (and reads);
 * `admin` does everything, webhook resends and metrics included. The shop's
 * single API token (checkout.token) is `admin`.
 */
export type Role = 'read' | 'create' | 'refund' | 'admin';

export const ROLES: readonly Role[] = ['read', 'create', 'refund', 'admin'];

export type Action = 'read' | 'create' | 'refund' | 'admin';

const GRANTS: Record<Role, readonly Action[]> = {
  read: ['read'],
  create: ['read', 'create'],
  refund: ['read', 'refund'],
  admin: ['read', 'create', 'refund', 'admin'],
};

export function can(role: Role, action: Action): boolean {
  return GRANTS[role].includes(action);
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
