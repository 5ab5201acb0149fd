import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { bearerToken } from '../cli/input/flag-file.js';
import { listenAddress } from '../cli/listen-address.js';
import { serverAccess } from '../cli/server-access.js';
import { serverFlags, ServerRuntime, walletChecks } from '../cli/server-runtime.js';
import { SessionCommand } from '../cli/session-command.js';
import { startToolset } from '../toolset/http.js';
import { holdToolsetSession } from '../toolset/session.js';
import { configDir } from '../wallet/paths.js';

export default class Serve extends SessionCommand {
  static override summary = 'Run the local HTTP toolset (nanopay\'s tools over HTTP) on 127.0.0.1:3123.';
  static override description = `Signs through the unlocked session (nanopay unlock --scope toolset), or unlocks the wallet once at start, and keeps
running; while it cannot serve (no wallet, no password source or session), each call answers why and what to run, and
it tries again at each call. Refuses requests whose Host is not the listen
address, requests from web pages (Origin or cross-site Sec-Fetch-Site), POST bodies that are not JSON (a POST without a body is
accepted) and large bodies. On loopback it answers only your own user: on Linux other users' connections are refused;
where the system cannot tell who connects, a token is required, made in serve.token in the config dir unless you give
one. With a token (--token-file, --token or NANOPAY_TOOLSET_TOKEN) every request needs "Authorization: Bearer <token>";
a non-loopback address requires one. Spending limits apply. GET /healthz and /readyz answer without the token (the user
check still applies); GET /metrics behind the same guards as the tools, or on --metrics-listen. Logs one line per request
to stderr (--log-format json: one object a line). SIGTERM or Ctrl-C drains it: calls in flight finish within
--drain-timeout, then it exits 0.`;
  static override examples = [
    'NANOPAY_PASSWORD=… <%= config.bin %> serve',
    '<%= config.bin %> serve --port 4000 --token-file ~/.nanopay-token',
    '<%= config.bin %> serve --allow-other-users --token-file ~/.nanopay-token',
  ];
  static override flags = {
    host: Flags.string({ description: 'address to listen on (default 127.0.0.1, or NANOPAY_HTTP_LISTEN_ADDR)' }),
    port: Flags.integer({ description: 'port (default 3123)', min: 0, max: 65535 }),
    token: Flags.string({ description: 'require this bearer token (prefer --token-file: flags show in ps)', env: 'NANOPAY_TOOLSET_TOKEN' }),
    'token-file': Flags.string({ description: 'require the bearer token read from this file (yours, mode 0600)' }),
    'allow-other-users': Flags.boolean({ description: 'DANGER: let other users of this machine call it (no user check, no token made); give a token' }),
    ...serverFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Serve);
    const runtime = new ServerRuntime(flags);
    const listen = listenAddress(process.env.NANOPAY_HTTP_LISTEN_ADDR ?? process.env.HTTP_LISTEN_ADDR, 'NANOPAY_HTTP_LISTEN_ADDR');
    const host = flags.host ?? listen.host ?? '127.0.0.1';
    const access = await serverAccess({
      host,
      token: await bearerToken(flags, 'toolset'),
      allowOtherUsers: flags['allow-other-users'],
      tokenFile: join(configDir(process.env), 'serve.token'),
      env: process.env,
    });
    const { log } = runtime;
    const holder = await holdToolsetSession(
      { password: this.passwordSource(flags), frontEnd: 'toolset', ...(flags.profile === undefined ? {} : { profile: flags.profile }) },
      (line) => log(line),
      'nanopay serve',
    );
    const { server: toolset, shown: probesShown } = await runtime.start(walletChecks(async (fn) => fn(await holder.session())), (probes) =>
      startToolset(holder, {
        host,
        port: flags.port ?? listen.port ?? 3123,
        ...(access.token === undefined ? {} : { token: access.token }),
        ...(access.onlyUser === undefined ? {} : { onlyUser: access.onlyUser }),
        log,
        afterWrite: () => holder.refreshWork(),
        probes,
        drainMs: runtime.drainMs,
      }),
    );
    log(`nanopay toolset listening on ${toolset.url} (${access.summary})`, { event: 'listening', fields: { url: toolset.url } });
    if (this.jsonEnabled()) {
      process.stdout.write(`${JSON.stringify({ url: toolset.url, token_required: access.token !== undefined, token_file: access.tokenFile ?? null, ...probesShown })}\n`);
    }
    await runtime.untilStopped(() => toolset.close());
  }
}
