import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { describeSource } from '../../cli/format.js';
import { SETTING_NAMES, getSetting, type SettingValue } from '../../ops/config.js';

export default class ConfigGet extends SessionCommand {
  static override summary = 'Show the value in effect of one setting, and where it comes from.';
  static override description = 'A variable (NANOPAY_API_URL, NANO_WORK_MODE, NANO_WORK_SERVER_URL, NANOPAY_API_KEY) overrides the profile, which overrides the default. With --json the value is clean and the source is a field of its own.';
  static override examples = ['<%= config.bin %> config get api-url', '<%= config.bin %> config get work-mode --json'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'setting name', required: true, options: SETTING_NAMES }) };

  async run(): Promise<SettingValue> {
    const { args, flags } = await this.parse(ConfigGet);
    const result = await getSetting(this.session(flags), args.name);
    this.log(`${result.value ?? '(not set)'}  (${describeSource(result)})`);
    return result;
  }
}
