import { Flags } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { createKey, type ApiKeyShown } from '../../../ops/access/keys.js';
import { ROLES } from '../../../shop/roles.js';

export default class CheckoutKeysCreate extends SessionCommand {
  static override summary = "Make an API key of the shop server with a role; its secret is shown this once.";
  static override description = `Roles: read (list, get, export requests and refunds), create (and make requests), refund (and order refunds),
admin (everything, metrics included; checkout.token is admin). The store keeps the key's SHA-256 only: copy the secret now.
Servers already running accept it at once.`;
  static override examples = ['<%= config.bin %> checkout keys create --name backend --role create', '<%= config.bin %> checkout keys create --name reports --role read --json'];
  static override flags = {
    name: Flags.string({ description: 'a name for the key (letters, digits, . _ -), unique among keys not revoked', required: true }),
    role: Flags.string({ description: 'what the key may do', options: [...ROLES], required: true }),
  };

  async run(): Promise<{ key: ApiKeyShown; secret: string }> {
    const { flags } = await this.parse(CheckoutKeysCreate);
    const made = await createKey(await this.session(flags).dataStore(), { name: flags.name, role: flags.role });
    this.log(`Created key ${made.key.id} "${made.key.name}" (role ${made.key.role}). Its secret, shown only this once:\n\n  ${made.secret}\n\nSend it as: Authorization: Bearer <secret>`);
    return made;
  }
}
