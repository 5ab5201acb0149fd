import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { describeSource } from '../../cli/output/format.js';
import { countRead, stdinRest } from '../../cli/input/stdin.js';
import { NanoPayError } from '../../errors.js';
import { SETTING_NAMES, isSecretSetting, setSetting, unsetSetting, type SettingValue } from '../../ops/profile/config.js';

export default class ConfigSet extends SessionCommand {
  static override summary = 'Change a setting of the profile (api-key and node-auth only from stdin).';
  protected static override allowsNewProfile = true;
  static override description = `Settings: api-url, api-key, limit-per-send, limit-per-day, receive-minimum, representative, x402-max, x402-auto-pay, x402-network, work-mode, work-servers, backend,
node-url, node-ws-url, node-auth, node-auth-scheme, database-url, rate-source, rate-cache, rate-max-age, rate-max-move and rate-quote-window (see config list). Secrets (api-key, node-auth) are read from stdin
only, so they stay out of shell history, and are stored encrypted. --stdin reads all of stdin (after the password line
with --password-stdin): the value must be one line, and an api-key one word. --unset removes a setting.`;
  static override examples = [
    '<%= config.bin %> config set api-url https://api.example.com',
    '<%= config.bin %> config set limit-per-send 5',
    'printf "%s" "$KEY" | <%= config.bin %> config set api-key --stdin',
    '<%= config.bin %> config set limit-per-day --unset',
  ];
  static override args = {
    name: Args.string({ ignoreStdin: true, description: 'setting name', required: true, options: SETTING_NAMES }),
    value: Args.string({ ignoreStdin: true, description: 'new value' }),
  };
  static override flags = {
    stdin: Flags.boolean({ description: 'read the value from stdin (required for api-key)' }),
    unset: Flags.boolean({ description: 'remove the setting' }),
  };

  async run(): Promise<SettingValue> {
    const { args, flags } = await this.parse(ConfigSet);
    const session = this.session(flags);
    let result: SettingValue;
    if (flags.unset) {
      result = await unsetSetting(session, args.name);
    } else {
      if (isSecretSetting(args.name) && !flags.stdin) {
        throw new NanoPayError('USAGE', `The ${args.name} setting is a secret, read from stdin only, so it stays out of shell history`, { hint: `printf "%s" "$KEY" | nanopay config set ${args.name} --stdin` });
      }
      // With --password-stdin the password is the first line: unlock before reading the value.
      if (isSecretSetting(args.name) && flags['password-stdin']) await session.keystore('create');
      const value = flags.stdin ? await valueFromStdin(args.name) : args.value;
      if (value === undefined) throw new NanoPayError('USAGE', `Give a value for ${args.name}, or --unset`);
      result = await setSetting(session, args.name, value);
    }
    this.log(`${result.name} = ${result.value ?? '(not set)'}  (${describeSource(result)})`);
    if (result.source === 'env') process.stderr.write(`Warning: ${result.variable} is set and overrides the profile's value.\n`);
    return result;
  }
}

/**
 * A value given on stdin is everything after the password line, and one line:
 * a second line is refused rather than dropped. An API key is one word too:
 * whitespace inside it is refused, never silently joined. Errors give counts, never the value.
 */
async function valueFromStdin(name: string): Promise<string> {
  const text = await stdinRest(`the value of ${name}`);
  const words = name === 'api-key';
  if (text.lines.length > 1 || (words && text.words.length > 1)) {
    throw new NanoPayError('INVALID_REQUEST', `Expected ${words ? 'one word' : 'one line'} for ${name} on stdin, but read ${countRead(text)}; nothing was stored`, {
      hint: words ? 'An API key has no spaces or line breaks: give exactly the key.' : 'Give the value on one line.',
    });
  }
  return text.lines[0] as string;
}
