import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { describeSource } from '../../cli/output/format.js';
import { SETTING_NAMES, getSetting, revealSetting, type RevealedSetting, type SettingValue } from '../../ops/profile/config.js';

export default class ConfigGet extends SessionCommand {
  static override summary = 'Show the value in effect of one setting, and where it comes from.';
  static override description = `A variable (NANOPAY_API_URL, NANO_WORK_MODE, NANO_WORK_SERVER_URL, NANOPAY_API_KEY) overrides the profile, which overrides the default. With --json the value is clean and the source is a field of its own.
A secret (api-key, node-auth) shows only whether it is set; --reveal prints its value alone (for a backup or a script), after asking for the key store password, even while an unlocked session runs.`;
  static override examples = [
    '<%= config.bin %> config get api-url',
    '<%= config.bin %> config get work-mode --json',
    '<%= config.bin %> config get api-key --reveal --password-file pass.txt > api-key.txt',
  ];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'setting name', required: true, options: SETTING_NAMES }) };
  static override flags = { reveal: Flags.boolean({ description: 'print the value of a secret (api-key, node-auth) alone; asks for the password' }) };

  async run(): Promise<SettingValue | RevealedSetting> {
    const { args, flags } = await this.parse(ConfigGet);
    if (flags.reveal) {
      const revealed = await revealSetting(this.session(flags), args.name);
      this.log(revealed.value);
      return revealed;
    }
    const result = await getSetting(this.session(flags), args.name);
    this.log(`${result.value ?? '(not set)'}  (${describeSource(result)})`);
    return result;
  }
}
