import { ExitCode } from '../errors.js';

/**
 * The sections of the top-level help (help.ts) that docs/reference.md repeats: the flags that mean the same on every
 * command, shell completion, the environment variables and the exit codes. One list for both, so they cannot differ
 * (scripts/write-reference.mjs reads this module from the build). Texts may hold <%= config.bin %>, as oclif's do.
 */

export const COMMON_FLAGS: [string, string][] = [
  ['--json', 'Print exactly one JSON document on stdout and nothing else there (NDJSON, one event per line, for streams such as status --watch); an error is {"error": {"code", "message"}}.'],
  ['-h, --help', 'Show the help of nanopay, of a topic or of a command.'],
  ['--profile NAME', 'Use this profile (default NANOPAY_PROFILE, else "default"); commands that use a wallet.'],
  ['--password-file PATH', 'Read the key store password from this file.'],
  ['--password-stdin', 'Read the key store password from the first line of stdin. These four may also come before the command: nanopay --profile live balance.'],
  ['--wallet NAME, --account I', 'Pay from (or read) this wallet and account index instead of the active ones: send, pay, donate, credits topup, balance, receive.'],
  ['-y, --yes', 'Do not ask for confirmation (the spending limits still apply).'],
];

export const COMPLETION: [string, string][] = [
  ['bash, zsh, powershell', '<%= config.bin %> autocomplete SHELL prints how to install it (the same as <%= config.bin %> completion SHELL).'],
  ['fish', '<%= config.bin %> completion fish > ~/.config/fish/completions/<%= config.bin %>.fish'],
];

/** Every variable nanopay reads (test/e2e/cli/help.test.ts checks the list against src/). */
export const ENVIRONMENT: [string, string][] = [
  ['NANOPAY_CONFIG_DIR', 'The config dir (default ~/.config/nanopay).'],
  ['NANOPAY_PROFILE', 'The profile (default "default"): its API URL and key, wallets and limits.'],
  ['NANOPAY_PASSWORD', 'The key store password (also AI_WALLET_PASSWORD).'],
  ['NANOPAY_API_URL', 'The payment service (default http://127.0.0.1:7076, the sandbox).'],
  ['NANOPAY_API_KEY', 'The API key, instead of the stored one.'],
  ['NANOPAY_FETCH_ALLOW_HOSTS', 'host:port list a paid fetch from serve, mcp or agent may reach though on this machine or a private network.'],
  ['NANOPAY_TIMEOUT', 'Bound of one call to the service or node, retries included (30s, 2m; default 60s); --timeout overrides.'],
  ['NANOPAY_TIMEOUT_MS', 'Timeout of one attempt of a call to the service or node (default 15000).'],
  ['NANOPAY_BACKEND', 'Who answers for the ledger: service (default) or node.'],
  ['NANOPAY_NODE_URL', 'Backend node: the node\'s HTTP RPC URL.'],
  ['NANOPAY_NODE_WS_URL', 'Backend node: the node\'s WebSocket URL (optional).'],
  ['NANOPAY_NODE_AUTH', 'Backend node: a node provider\'s key.'],
  ['NANOPAY_DATABASE_URL', 'Backend node: a PostgreSQL URL, the payment requests\' store several servers share (default: SQLite in the config dir).'],
  ['NANOPAY_RATE_SOURCE', 'Prices in another currency (request --currency): the rate source\'s URL, instead of the profile\'s rate-source.'],
  ['NANOPAY_REPRESENTATIVE', 'The representative new accounts open with, instead of the profile\'s.'],
  ['NANO_WORK_MODE', 'Proof of work: auto (default: work servers, then this machine), cpu or remote.'],
  ['NANO_WORK_SERVER_URL', 'Work server URLs, comma-separated.'],
  ['NANO_WORK_TIMEOUT_MS', 'Timeout of one work server (default 10000).'],
  ['HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY', 'Proxies for the service, node, work servers and rate source (lower case too); loopback is always direct.'],
  ['NANOPAY_POW_ENGINE', 'Force a local proof-of-work engine: native, wasm or js; native:KERNEL (avx2, avx512-16…) one native kernel.'],
  ['NANOPAY_HTTP_LISTEN_ADDR', 'serve: the listen address host:port (default 127.0.0.1:3123; also HTTP_LISTEN_ADDR).'],
  ['NANOPAY_TOOLSET_TOKEN', 'serve: the bearer token every request must carry.'],
  ['NANOPAY_AGENT_LISTEN_ADDR', 'agent: the listen address host:port (default 127.0.0.1:7860).'],
  ['NANOPAY_AGENT_TOKEN', 'agent: the bearer token every request must carry.'],
  ['NANOPAY_SOCKET_TABLES', 'serve, agent: where the kernel\'s socket tables are (default /proc/net), to tell which user connects.'],
  ['NANOPAY_AGENT_DIR', 'agent: strict mode\'s own directory.'],
  ['AGENT_MODE', 'agent: production means strict mode.'],
  ['AI_WALLET_PASSWORD', 'agent strict mode: the wallet password (else a generated one).'],
  ['NANOPAY_AGENT_MODEL_URL', 'agent: an OpenAI-compatible model endpoint (optional).'],
  ['NANOPAY_AGENT_MODEL', 'agent: the model\'s name.'],
  ['NANOPAY_AGENT_MODEL_KEY', 'agent: the model endpoint\'s key, when it needs one.'],
  ['NANOPAY_QR_STYLE', 'request: dark (default) or light, the terminal background the QR code is drawn for.'],
  ['NO_COLOR', 'No colour.'],
];

export const EXIT_CODES: [number, string][] = [
  [ExitCode.OK, 'Success.'],
  [ExitCode.GENERAL, 'An unexpected error (a bug: please report it), a damaged store, or a path that is not yours and private.'],
  [ExitCode.USAGE, 'Usage: an unknown command or flag, a missing argument, a confirmation needed without a terminal.'],
  [ExitCode.INVALID_INPUT, 'Invalid input: an address, amount, hex, mnemonic, URI, block, credits tier or malformed transaction id.'],
  [ExitCode.INSUFFICIENT_FUNDS, 'Insufficient funds or credits.'],
  [ExitCode.UPSTREAM, 'The service (or node, or the PostgreSQL store, or the rate source of a price in another currency) failed or could not be reached, or sent an answer too large or not to be trusted; no request was made.'],
  [ExitCode.AUTH, 'Authentication: a missing or invalid API key, a wrong or missing password, a proxy or PostgreSQL server that refused ours.'],
  [ExitCode.LIMIT, 'The spending policy refused the spend (POLICY_DENIED names the rule), or an x402 offer nanopay will not pay: over --max (or no maximum set), on another network than the backend\'s, or asking for too much work.'],
  [ExitCode.TIMEOUT, 'Timed out (status --watch --timeout: the service answered but nobody paid).'],
  [ExitCode.NOT_FOUND, 'Not found: a transaction id, block, account, wallet or profile.'],
  [ExitCode.CONFLICT, 'Conflict: the ledger refused the block, the account or key store is busy, the name exists, a refund of more than was received.'],
  [ExitCode.EXPIRED, 'The payment request expired unpaid, or was paid only after it expired (status --watch, request --watch).'],
  [ExitCode.DECLINED, 'Declined: you answered no to a confirmation; nothing was done.'],
  [ExitCode.ENVIRONMENT, 'The machine: the disk is full, a file or dir nanopay must write is read-only or not yours, or Node.js is older than 22; nothing was changed. Commands that only read still run on a read-only config dir.'],
  [ExitCode.APPROVAL, 'The spend waits for a person\'s approval (APPROVAL_REQUIRED): nanopay approvals approve ID, then --approval ID.'],
  [ExitCode.INTERRUPTED, 'Interrupted (Ctrl-C, at any moment, prompts included); a server stopped by a second SIGTERM or Ctrl-C during its drain.'],
];

/**
 * Descriptions are written with line breaks for the source's sake: a paragraph's lines are
 * joined, so oclif wraps them to the terminal's width. Blank lines still part paragraphs, and
 * an indented line (a command to copy) keeps its own line.
 */
export function reflow(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return text
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.split('\n').reduce((out, line) => (out === '' ? line : /^\s/.test(line) || /^\s/.test(out.split('\n').at(-1) ?? '') ? `${out}\n${line}` : `${out} ${line}`), ''))
    .join('\n\n');
}
