import { Args } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { revokeKey, type ApiKeyShown } from '../../../ops/access/keys.js';

export default class KeysRevoke extends SessionCommand {
  static override summary = 'Revoke an API key by id or name: servers already running refuse it from their next call.';
  static override examples = ['<%= config.bin %> checkout keys revoke accountant'];
  static override args = { key: Args.string({ ignoreStdin: true, description: 'the key id or name', required: true }) };

  async run(): Promise<ApiKeyShown> {
    const { args, flags } = await this.parse(KeysRevoke);
    const key = await revokeKey(await this.session(flags).dataStore(), args.key);
    this.log(`Revoked ${key.name} (${key.id}) at ${key.revoked_at ?? ''}.`);
    return key;
  }
}
