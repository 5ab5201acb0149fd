import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { removeContact, type Contact } from '../../ops/profile/contacts.js';

export default class ContactsRemove extends SessionCommand {
  static override summary = 'Remove a contact; @NAME then pays nothing (an unknown name is refused, never guessed).';
  static override description = 'NAME may be given with or without its @. Payments already made to the address are not affected.';
  static override examples = ['<%= config.bin %> contacts remove alice'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'the contact\'s name', required: true }) };

  async run(): Promise<{ removed: Contact }> {
    const { args, flags } = await this.parse(ContactsRemove);
    const result = await removeContact(this.session(flags), { name: args.name });
    this.log(`Removed @${result.removed.name} (${result.removed.address})`);
    return result;
  }
}
