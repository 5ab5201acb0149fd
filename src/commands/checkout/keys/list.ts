import { SessionCommand } from '../../../cli/session-command.js';
import { listKeys, type ApiKeyShown } from '../../../ops/access/keys.js';

export default class KeysList extends SessionCommand {
  static override summary = "List the shop's API keys: name, role, the key's first characters, when made, last used, revoked.";
  static override examples = ['<%= config.bin %> checkout keys list --json'];

  async run(): Promise<{ keys: ApiKeyShown[] }> {
    const { flags } = await this.parse(KeysList);
    const keys = await listKeys(await this.session(flags).dataStore());
    if (keys.length === 0) this.log('No API key. Make one: nanopay checkout keys create --name NAME --role read');
    for (const k of keys) {
      const state = k.revoked_at === undefined ? `last used ${k.last_used_at ?? 'never'}` : `revoked ${k.revoked_at}`;
      this.log(`${k.id}  ${k.name.padEnd(16)} ${k.role.padEnd(7)} ${k.prefix}…  made ${k.created_at}, ${state}`);
    }
    return { keys };
  }
}
