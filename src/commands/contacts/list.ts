import { table } from '../../cli/output/format.js';
import { SessionCommand } from '../../cli/session-command.js';
import { listContacts, type Contact } from '../../ops/profile/contacts.js';

export default class ContactsList extends SessionCommand {
  static override summary = 'List the profile\'s contacts: names and the addresses @NAME pays.';
  protected static override allowsNewProfile = true;
  static override description = 'Names are shown with their @, as send and donate --to take them. --json: {contacts: [{name, address, added_at, changed_at?}]}.';
  static override examples = ['<%= config.bin %> contacts list', '<%= config.bin %> contacts list --json'];

  async run(): Promise<{ contacts: Contact[] }> {
    const { flags } = await this.parse(ContactsList);
    const result = await listContacts(this.session(flags));
    if (result.contacts.length === 0) this.log('No contacts yet. Add one with: nanopay contacts add NAME nano_…');
    else this.log(table([['NAME', 'ADDRESS'], ...result.contacts.map((c) => [`@${c.name}`, c.address])]));
    return result;
  }
}
