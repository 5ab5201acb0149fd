import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { fundFromFaucet } from '../../ops/account/faucet.js';

export default class SandboxFund extends SessionCommand {
  static override summary = 'Get test funds from the sandbox faucet (NANOPAY_API_URL must point at a sandbox).';
  static override description = 'The faucet sends to the active account (or ADDRESS); receive the funds with receive. A real service has no faucet.';
  static override examples = ['<%= config.bin %> sandbox fund', '<%= config.bin %> sandbox fund nano_1… --amount 25'];
  static override args = { address: Args.string({ ignoreStdin: true, description: 'address to fund (default: the active account)' }) };
  static override flags = { amount: Flags.string({ description: 'XNO to send', default: '10' }) };

  async run(): Promise<Awaited<ReturnType<typeof fundFromFaucet>>> {
    const { args, flags } = await this.parse(SandboxFund);
    const funded = await fundFromFaucet(this.session(flags), { amount: flags.amount, ...(args.address === undefined ? {} : { address: args.address }) });
    this.log(`The faucet sent ${funded.amount} XNO to ${funded.address} (block ${funded.hash}); receive it with: nanopay receive`);
    return funded;
  }
}
