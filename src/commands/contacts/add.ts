import { Args, Flags } from '@oclif/core';
import { confirmOnTerminal } from '../../cli/input/confirm.js';
import { SessionCommand } from '../../cli/session-command.js';
import { addContact, type ContactAdded, type ContactChange } from '../../ops/profile/contacts.js';

export default class ContactsAdd extends SessionCommand {
  static override summary = 'Give an address a name, to pay it as @NAME (send @NAME 1, donate --to @NAME).';
  protected static override allowsNewProfile = true;
  static override description = `NAME: 1 to 32 letters, digits, ".", "-" or "_" (case does not matter; a leading @ is dropped). Adding a name that
exists with another address changes where @NAME pays, so it shows the old and the new address and asks on a terminal;
--yes confirms; without a terminal and without --yes it is refused (exit 10) and nothing changes.`;
  static override examples = ['<%= config.bin %> contacts add alice nano_1…', '<%= config.bin %> contacts add alice nano_3… --yes'];
  static override args = {
    name: Args.string({ ignoreStdin: true, description: 'the contact\'s name', required: true }),
    address: Args.string({ ignoreStdin: true, description: 'its address (nano_… or xrb_…)', required: true }),
  };
  static override flags = {
    yes: Flags.boolean({ char: 'y', description: 'confirm a change of address without asking' }),
  };

  async run(): Promise<ContactAdded> {
    const { args, flags } = await this.parse(ContactsAdd);
    const onTerminal = process.stdin.isTTY && process.stderr.isTTY;
    const ask = async (c: ContactChange): Promise<boolean> => {
      process.stderr.write(`@${c.name} pays ${c.from} now; it would pay ${c.to}.\n`);
      return confirmOnTerminal(`Change the address of @${c.name}?`, false);
    };
    const confirm = flags.yes ? async () => true : onTerminal ? ask : undefined;
    const result = await addContact(this.session(flags), { name: args.name, address: args.address, ...(confirm === undefined ? {} : { confirm }) });
    if (result.status === 'added') this.log(`Added @${result.name}: ${result.address}`);
    else if (result.status === 'changed') this.log(`Changed @${result.name}: ${result.previous_address} -> ${result.address}`);
    else this.log(`@${result.name} is already ${result.address}; nothing changed.`);
    return result;
  }
}
