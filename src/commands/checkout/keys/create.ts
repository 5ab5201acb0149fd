import { Flags } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { createKey, type ApiKeyShown } from '../../../ops/access/keys.js';
import { ROLES } from '../../../shop/roles.js';

export default class KeysCreate extends SessionCommand {
  static override summary = "Make an API key of the shop's API with a role; the key is shown this once.";
  static override description = `Roles: read (list, get, export requests and refunds), create (make requests, and read), refund (refund
and make claim links, and read), admin (everything: the API token checkout.token is admin). The store keeps the key's
SHA-256 only: copy it now. Revoke it with checkout keys revoke; running servers refuse it from their next call.`;
  static override examples = ['<%= config.bin %> checkout keys create --name accountant --role read', '<%= config.bin %> checkout keys create --name shop-backend --role create --json'];
  static override flags = {
    name: Flags.string({ description: 'a name for the key (unique among live keys)', required: true }),
    role: Flags.string({ description: 'what the key may do', options: [...ROLES], required: true }),
  };

  async run(): Promise<ApiKeyShown & { key: string }> {
    const { flags } = await this.parse(KeysCreate);
    const { key, secret } = await createKey(await this.session(flags).dataStore(), { name: flags.name, role: flags.role });
    this.log(`Key ${key.name} (${key.role}), id ${key.id}. It is shown this once; use it as Authorization: Bearer <key>:`);
    this.log(secret);
    return { ...key, key: secret };
  }
}
