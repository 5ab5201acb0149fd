import { Args } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { revokeKey, type ApiKeyShown } from '../../../ops/access/keys.js';

export default class CheckoutKeysRevoke extends SessionCommand {
  static override summary = 'Revoke an API key of the shop server, by id or name: every server refuses it from its next call.';
  static override description = 'A revoked key stays in keys list (with when it was revoked); its name may be given to a new key. Revoking twice changes nothing.';
  static override examples = ['<%= config.bin %> checkout keys revoke backend', '<%= config.bin %> checkout keys revoke key_3f9a0c1e5b7d2a46'];
  static override args = { key: Args.string({ ignoreStdin: true, description: 'the key id or name (checkout keys list)', required: true }) };

  async run(): Promise<{ key: ApiKeyShown }> {
    const { args, flags } = await this.parse(CheckoutKeysRevoke);
    const key = await revokeKey(await this.session(flags).dataStore(), args.key);
    this.log(`Revoked key ${key.id} "${key.name}" (${key.prefix}…) at ${key.revoked_at ?? ''}.`);
    return { key };
  }
}
