import { join } from 'node:path';
import { Flags } from '@oclif/core';
import { modelFromEnv } from '../agent/model.js';
import { DEFAULT_AGENT_PORT, requireTokenOffLoopback, startAgent } from '../agent/server.js';
import { confirmAbovePolicy, profileHolder, strictHolder, type WalletHolder } from '../agent/wallet-holder.js';
import { bearerToken } from '../cli/input/flag-file.js';
import { listenAddress } from '../cli/listen-address.js';
import { serverAccess } from '../cli/server-access.js';
import { serverFlags, ServerRuntime, walletChecks } from '../cli/server-runtime.js';
import { SessionCommand } from '../cli/session-command.js';
import { parseOrigin } from '../http/origin.js';
import { xnoToRaw } from '../nano/index.js';
import { configDir } from '../wallet/paths.js';

export default class Agent extends SessionCommand {
  static override summary = `Run the payment agent on 127.0.0.1:${DEFAULT_AGENT_PORT}: the SDK's calls and a streaming chat.`;
  static override description = `Routes: GET /wallet/balance, POST /wallet/send, POST /payment/request, GET /payment/status/:id (the
toolset envelope), GET /status, and POST /chat ({"message": …} or {"confirm": TOKEN}), answered as Server-Sent
Events or NDJSON (Accept: application/x-ndjson). The chat reasons with an OpenAI-compatible model when
NANOPAY_AGENT_MODEL_URL and NANOPAY_AGENT_MODEL are set, else with a plain grammar ("help" lists it).
Strict mode (--strict or AGENT_MODE=production) owns its wallet in its own directory: made at first start with a random
password (a 0600 file, or AI_WALLET_PASSWORD), unlocked per request and let go after. Otherwise the profile's wallet
is used, unlocked once like serve. The spending policy applies to every spend; --confirm-above adds a rule to it for this
process (ask-above-hour --front-end agent): a spend (send, donation, top-up, paid fetch) that would take the agent's spending
without a person's yes in the last hour above it waits for an approval. A person approves a held spend with nanopay approvals
approve ID (the key store password). --chat-confirms lets whoever can reach /chat approve the spends the chat held, with
the token it shows ({"confirm": TOKEN}): only for a chat whose users are the people who may approve, never an agent's.
On loopback it answers only your own user: on Linux other users' connections are refused; where the system cannot tell
who connects, a token is required, made in agent.token (the agent's directory in strict mode, else the config dir)
unless you give one. GET /healthz and /readyz answer without the token (the user check still applies; in strict mode a
readiness check that reaches the backend unlocks the key store, at most once in 5 s); GET /metrics behind the same
guards as the rest, or on --metrics-listen. --log-format json logs one object a line. SIGTERM or Ctrl-C drains it:
calls in flight (a chat turn) finish within --drain-timeout, then it exits 0.`;
  static override examples = [
    'AGENT_MODE=production <%= config.bin %> agent --json',
    '<%= config.bin %> agent --port 7861 --confirm-above 1',
    'NANOPAY_AGENT_TOKEN=… <%= config.bin %> agent --host 0.0.0.0 --strict',
  ];
  static override flags = {
    host: Flags.string({ description: 'address to listen on (default 127.0.0.1, or NANOPAY_AGENT_LISTEN_ADDR)' }),
    port: Flags.integer({ description: `port (default ${DEFAULT_AGENT_PORT}; 0 picks a free one)`, min: 0, max: 65535 }),
    strict: Flags.boolean({ description: 'custodial mode: the agent owns its wallet (also AGENT_MODE=production)' }),
    dir: Flags.string({ description: 'strict mode: the agent\'s own directory (default NANOPAY_AGENT_DIR, or "agent" in the config dir)' }),
    'confirm-above': Flags.string({ description: 'spends that would take the last hour\'s total without approval above this many XNO wait for an approval' }),
    'chat-confirms': Flags.boolean({ description: 'the chat\'s user approves the spends the chat held, with a token (off: only nanopay approvals approve)' }),
    'allow-origin': Flags.string({ description: 'a web origin (scheme://host[:port]) allowed to call the agent (repeatable)', multiple: true }),
    token: Flags.string({ description: 'require this bearer token (prefer --token-file: flags show in ps)', env: 'NANOPAY_AGENT_TOKEN' }),
    'token-file': Flags.string({ description: 'require the bearer token read from this file (yours, mode 0600)' }),
    'allow-other-users': Flags.boolean({ description: 'DANGER: let other users of this machine call it (no user check, no token made); give a token' }),
    ...serverFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Agent);
    const runtime = new ServerRuntime(flags);
    const env = process.env;
    const listen = listenAddress(env.NANOPAY_AGENT_LISTEN_ADDR, 'NANOPAY_AGENT_LISTEN_ADDR');
    const token = await bearerToken(flags, 'agent');
    const confirmAboveRaw = flags['confirm-above'] === undefined ? undefined : xnoToRaw(flags['confirm-above']);
    // A rule of the spending policy for this process: the agent's spends made without a person's yes in the last hour stay within it.
    const policy = confirmAboveRaw === undefined ? undefined : confirmAbovePolicy(confirmAboveRaw);
    const host = flags.host ?? listen.host ?? '127.0.0.1';
    // Before the wallet is made or unlocked: a refused start leaves nothing behind.
    requireTokenOffLoopback(host, token);
    const allowOrigins = (flags['allow-origin'] ?? []).map(parseOrigin);
    const strict = flags.strict || env.AGENT_MODE === 'production';
    const agentDir = flags.dir ?? env.NANOPAY_AGENT_DIR ?? join(configDir(env), 'agent');
    const access = await serverAccess({
      host,
      token,
      allowOtherUsers: flags['allow-other-users'],
      tokenFile: join(strict ? agentDir : configDir(env), 'agent.token'),
      env,
    });
    const { log } = runtime;
    const holder: WalletHolder = strict
      ? await strictHolder({ dir: agentDir, env, log, ...(policy === undefined ? {} : { policy }) })
      : await profileHolder({ password: this.passwordSource(flags), ...(policy === undefined ? {} : { policy }), ...(flags.profile === undefined ? {} : { profile: flags.profile }) }, log);
    const model = modelFromEnv(env);
    const { server: agent, shown: probesShown } = await runtime.start(walletChecks((fn) => holder.use(fn)), (probes) =>
      startAgent({
        host,
        port: flags.port ?? listen.port ?? DEFAULT_AGENT_PORT,
        holder,
        log,
        ...(access.token === undefined ? {} : { token: access.token }),
        ...(access.onlyUser === undefined ? {} : { onlyUser: access.onlyUser }),
        ...(confirmAboveRaw === undefined ? {} : { confirmAboveRaw }),
        ...(model === undefined ? {} : { model }),
        chatConfirms: flags['chat-confirms'],
        allowOrigins,
        probes,
        drainMs: runtime.drainMs,
      }),
    );
    const address = await holder.address();
    log(`nanopay agent listening on ${agent.url} (${strict ? 'strict' : 'profile wallet'}, ${model === undefined ? 'plain grammar' : `model ${model.model}`}; ${access.summary}); fund ${address}`, {
      event: 'listening',
      fields: { url: agent.url, address },
    });
    if (this.jsonEnabled()) {
      const started = { url: agent.url, address, strict, model: model?.model ?? null, token_required: access.token !== undefined, token_file: access.tokenFile ?? null, ...probesShown };
      process.stdout.write(`${JSON.stringify(started)}\n`);
    }
    await runtime.untilStopped(() => agent.close());
  }
}
