import { Flags } from '@oclif/core';
import { bearerToken } from '../cli/flag-file.js';
import { listenAddress } from '../cli/listen-address.js';
import { SessionCommand } from '../cli/session-command.js';
import { startToolset } from '../toolset/http.js';
import { openToolsetSession } from '../toolset/session.js';

export default class Serve extends SessionCommand {
  static override summary = 'Run the local HTTP toolset (the seven tools) on 127.0.0.1:3123.';
  static override description = `Unlocks the wallet once at start and keeps running. Refuses requests whose Host is not the listen
address, requests from web pages (Origin or cross-site Sec-Fetch-Site), POST bodies that are not JSON (a POST without a body is
accepted) and large bodies. With a token
(--token-file, --token or NANOPAY_TOOLSET_TOKEN) every request needs "Authorization: Bearer <token>"; a non-loopback
address requires one. Spending limits apply. Logs one line per request to stderr.`;
  static override examples = ['NANOPAY_PASSWORD=… <%= config.bin %> serve', '<%= config.bin %> serve --port 4000 --token-file ~/.nanopay-token'];
  static override flags = {
    host: Flags.string({ description: 'address to listen on (default 127.0.0.1, or NANOPAY_HTTP_LISTEN_ADDR)' }),
    port: Flags.integer({ description: 'port (default 3123)', min: 0, max: 65535 }),
    token: Flags.string({ description: 'require this bearer token (prefer --token-file: flags show in ps)', env: 'NANOPAY_TOOLSET_TOKEN' }),
    'token-file': Flags.string({ description: 'require the bearer token read from this file' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Serve);
    const listen = listenAddress(process.env.NANOPAY_HTTP_LISTEN_ADDR ?? process.env.HTTP_LISTEN_ADDR, 'NANOPAY_HTTP_LISTEN_ADDR');
    const token = await bearerToken(flags, 'toolset');
    const log = (line: string): void => void process.stderr.write(`${new Date().toISOString()} ${line}\n`);
    const { session, refreshWork } = await openToolsetSession(
      { password: this.passwordSource(flags), ...(flags.profile === undefined ? {} : { profile: flags.profile }) },
      log,
    );
    const toolset = await startToolset(session, {
      host: flags.host ?? listen.host ?? '127.0.0.1',
      port: flags.port ?? listen.port ?? 3123,
      ...(token === undefined ? {} : { token }),
      log,
      afterWrite: refreshWork,
    });
    log(`nanopay toolset listening on ${toolset.url}${token === undefined ? '' : ' (token required)'}`);
    if (this.jsonEnabled()) process.stdout.write(`${JSON.stringify({ url: toolset.url, token_required: token !== undefined })}\n`);
    // Lasting listeners: a second signal while the toolset closes must not kill it mid-close.
    await new Promise<void>((resolve) => {
      process.on('SIGINT', () => resolve());
      process.on('SIGTERM', () => resolve());
    });
    await toolset.close();
  }
}
