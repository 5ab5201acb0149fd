import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { SETTING_NAMES, getSetting, type SettingValue } from '../../ops/config.js';

export default class ConfigGet extends SessionCommand {
  static override summary = 'Show one setting of the profile.';
  static override args = { name: Args.string({ ignoreStdin: true, description: 'setting name', required: true, options: SETTING_NAMES }) };

  async run(): Promise<SettingValue> {
    const { args, flags } = await this.parse(ConfigGet);
    const result = await getSetting(this.session(flags), args.name);
    this.log(result.value ?? '(not set)');
    return result;
  }
}
