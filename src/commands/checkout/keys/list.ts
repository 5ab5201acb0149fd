import { table } from '../../../cli/output/format.js';
import { SessionCommand } from '../../../cli/session-command.js';
import { listKeys, type ApiKeyShown } from '../../../ops/access/keys.js';

export default class CheckoutKeysList extends SessionCommand {
  static override summary = "List the shop server's API keys: id, name, role, the start of the secret, when made and last used, revoked or not.";
  static override description = 'Secrets are never shown again after checkout keys create; the start (prefix) recognises one.';
  static override examples = ['<%= config.bin %> checkout keys list', '<%= config.bin %> checkout keys list --json'];

  async run(): Promise<{ keys: ApiKeyShown[] }> {
    const { flags } = await this.parse(CheckoutKeysList);
    const keys = await listKeys(await this.session(flags).dataStore());
    if (keys.length === 0) this.log('No API keys yet (checkout keys create makes one).');
    else {
      const rows = keys.map((k) => [k.id, k.name, k.role, `${k.prefix}…`, k.created_at, k.last_used_at ?? 'never', k.revoked_at === undefined ? '' : `revoked ${k.revoked_at}`]);
      this.log(table([['ID', 'NAME', 'ROLE', 'PREFIX', 'CREATED', 'LAST USED', 'REVOKED'], ...rows]));
    }
    return { keys };
  }
}
