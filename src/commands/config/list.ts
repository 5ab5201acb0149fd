import { describeSource, table } from '../../cli/output/format.js';
import { SessionCommand } from '../../cli/session-command.js';
import { listSettings } from '../../ops/profile/config.js';

export default class ConfigList extends SessionCommand {
  static override summary = 'List the settings of the profile, with the value in effect and where it comes from.';
  static override description = 'A variable overrides the profile, which overrides the default; secrets are never shown.';
  static override examples = ['<%= config.bin %> config list', '<%= config.bin %> config list --profile shop --json'];

  async run(): Promise<Omit<Awaited<ReturnType<typeof listSettings>>, 'proxies'> & { proxies: Record<string, string | null> }> {
    const { flags } = await this.parse(ConfigList);
    const { proxies, ...result } = await listSettings(this.session(flags));
    this.log(`Profile: ${result.profile}`);
    this.log(table([['SETTING', 'VALUE', 'FROM', 'MEANING'], ...result.settings.map((s) => [s.name, s.value ?? '(not set)', describeSource(s), s.description])]));
    const set = proxies.filter((p) => p.value !== null);
    this.log(set.length === 0 ? 'Proxy: none (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY unset); loopback is always reached directly' : `Proxy: ${set.map((p) => `${p.name}=${p.value}`).join(', ')}; loopback is always reached directly`);
    return { ...result, proxies: Object.fromEntries(proxies.map((p) => [p.name.toLowerCase(), p.value])) };
  }
}
