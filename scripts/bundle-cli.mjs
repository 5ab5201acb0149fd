// Bundles the CLI (entry, every command, the proof-of-work worker, the unlocked session's process) into dist/app
// with esbuild: loading a few files instead of hundreds (@oclif/core alone is about 160) is most of a
// command's start-up. tsc's dist/ stays as it is for the library (dist/index.js) and the demo.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'dist', 'app');

function commandFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? commandFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

const entryPoints = [
  { in: join(root, 'src/cli/main.ts'), out: 'main' },
  // bin/run.js turns on Node's compile cache with it before it loads main.
  { in: join(root, 'src/cli/compile-cache.ts'), out: 'compile-cache' },
  // src/work/generator.ts starts workers from './pow-worker.js' beside itself.
  { in: join(root, 'src/work/pow-worker.ts'), out: 'pow-worker' },
  // src/work/kernel-choice.ts starts the kernels' measurement from './measure-kernels.js' beside itself.
  { in: join(root, 'src/work/measure-kernels.ts'), out: 'measure-kernels' },
  // src/wallet/unlocked.ts starts the unlocked session's process from './session-process.js' beside its chunk.
  { in: join(root, 'src/session/process.ts'), out: 'session-process' },
  // package.json names it as oclif's help class.
  { in: join(root, 'src/cli/help.ts'), out: 'help' },
  // package.json names it as oclif's command_not_found hook.
  { in: join(root, 'src/hooks/not-found.ts'), out: 'hooks/not-found' },
  ...commandFiles(join(root, 'src/commands')).map((file) => ({
    in: file,
    out: relative(join(root, 'src'), file).slice(0, -'.ts'.length).split(sep).join('/'),
  })),
];

/**
 * oclif sorts each plugin's commands with localeCompare, and the first localeCompare of a process
 * builds ICU's collator: ~70M instructions, an eighth of `config list`. On ids of lower-case
 * letters and colons the code-unit order is the same; the build stops if a command id (ours or a
 * plugin's) would sort otherwise, or if oclif's line changes.
 */
const OCLIF_SORT = '.sort((a, b) => a.id.localeCompare(b.id))';
const commandIds = [
  // oclif names a topic's index.ts after the topic.
  commandFiles(join(root, 'src/commands')).map((file) =>
    relative(join(root, 'src/commands'), file).slice(0, -'.ts'.length).split(sep).join(':').replace(/:index$/, ''),
  ),
  ...JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).oclif.plugins.map((plugin) =>
    Object.keys(JSON.parse(readFileSync(join(root, 'node_modules', plugin, 'oclif.manifest.json'), 'utf8')).commands),
  ),
];
for (const ids of commandIds) {
  const byLocale = [...ids].sort((a, b) => a.localeCompare(b)).join(' ');
  const byCodeUnit = [...ids].sort().join(' ');
  if (byLocale !== byCodeUnit) {
    console.error(`bundle-cli: these command ids sort differently by code unit than by locale, so oclif's sort cannot be replaced:\n  ${byLocale}\n  ${byCodeUnit}`);
    process.exit(1);
  }
}
/**
 * At every start oclif picks its core plugins from package.json's dependencies by matching each name against
 * each oclif.plugins entry with minimatch: ~45 pattern compilations, 5-10 ms of a command. Our entries are plain
 * names, for which minimatch is string equality; entries with a glob character still go to minimatch.
 * (A glob character, an extglob's parenthesis, an escape, a negation or a comment: minimatch decides.)
 */
const OCLIF_MATCH = 'patterns.some((w) => (0, minimatch_1.minimatch)(p, w))';
const LITERAL_MATCH = 'patterns.some((w) => (/[*?[\\]{}()\\\\]|^[!#]/.test(w) ? (0, minimatch_1.minimatch)(p, w) : p === w))';

/**
 * oclif requires at load time modules that a command seldom or never runs: globbing for command files
 * (we ship a manifest), minimatch (see OCLIF_MATCH), EJS (only for templated settings), the spinners'
 * frames (only when a spinner starts); ~15 ms of every command. And, ~3 ms more, perf_hooks (only with its
 * performance tracking on), readline (only for a flag read from stdin), child_process (only to ask Windows for its
 * shell). Each is loaded on first use instead, behind a proxy over the module (oclif only reads properties of these).
 */
function lazyRequire(line) {
  const [, name, load] = /^const (\w+) = (.*);$/.exec(line);
  return [line, `const ${name} = (() => { let loaded; return new Proxy({}, { get: (_, key) => (loaded ??= ${load})[key] }); })();`];
}

/**
 * oclif's check of the Node version loads semver before it reads oclif's package.json beside
 * __dirname, which an ES module bundle has not: the check always throws there (and ignores it), so
 * semver (~10 ms) is required for nothing. Requiring it after the package.json keeps the check as it
 * is wherever it can run.
 */
const OCLIF_VERSION_CHECK = [
  "const semver = require('semver');\n        const root = path.join(__dirname, '..');\n        const pjson = require(path.join(root, 'package.json'));",
  "const root = path.join(__dirname, '..');\n        const pjson = require(path.join(root, 'package.json'));\n        const semver = require('semver');",
];

/**
 * What oclif loads only on the paths above that our commands never take (semver, globbing, minimatch) stays out
 * of the bundle: a third less of oclif for V8 to scan at every start (~2% of a command). Were they taken, they load from node_modules,
 * from the package oclif itself depends on (checked below).
 */
const UNBUNDLED = ['semver', 'tinyglobby', 'minimatch'];

/**
 * At every start oclif asks whether this is WSL by importing wsl-utils (and is-wsl, is-inside-container with it): a
 * chunk of its own, ~3 ms. Off Linux, and on a Linux none of whose signs of WSL is there (the ones is-wsl 3.1.1 reads:
 * "microsoft" in the kernel's release or /proc/version, WSL's interop or run file), is-wsl says no without it; with
 * a sign, wsl-utils still decides. The build stops when is-wsl changes: see whether it reads other signs, then
 * update NO_SIGN_OF_WSL and the hash.
 */
const OCLIF_WSL = "return (await import('wsl-utils')).isWsl ? 'wsl' : (0, node_os_1.platform)();";
const NO_SIGN_OF_WSL =
  "(0, node_os_1.platform)() !== 'linux' || !(/microsoft/i.test((0, node_os_1.release)()) || /microsoft/i.test((() => { try { return require('node:fs').readFileSync('/proc/version', 'utf8'); } catch { return ''; } })()) || require('node:fs').existsSync('/proc/sys/fs/binfmt_misc/WSLInterop') || require('node:fs').existsSync('/run/WSL'))";
const IS_WSL_SHA256 = '372d2f01ed3c9c67d25a0d24fc39ea7920483ae60992593fbc3272da94bb770b';
const isWsl = createRequire(join(root, 'node_modules/wsl-utils/index.js')).resolve('is-wsl');
if (createHash('sha256').update(readFileSync(isWsl)).digest('hex') !== IS_WSL_SHA256) {
  console.error(`bundle-cli: ${isWsl} changed, so oclif's WSL check may read signs the edit of util/os.js skips: update NO_SIGN_OF_WSL and IS_WSL_SHA256`);
  process.exit(1);
}

/**
 * oclif's help renders every text it shows as an EJS template (`<%= config.bin %>` in examples), and EJS compiles
 * each one to a function first: about 15 ms of `--help`, whose summaries have no tag. A text without EJS's
 * delimiters renders as itself, so it is left as it is.
 */
const OCLIF_RENDER = 'return ejs_1.default.render(t, context);';
const RENDER_TAGS_ONLY = "return /<%|%>/.test(t) ? ejs_1.default.render(t, context) : t;";

/**
 * oclif wraps its help with wrap-ansi, which measures every character with string-width 4, which builds its emoji
 * regular expression anew at each call: ~10 ms of `--help`. A string of printable ASCII only (no escape, no emoji, no
 * wide or combining character) is as wide as it is long, which string-width then says at once.
 */
const STRING_WIDTH = '\tstring = stripAnsi(string);\n';
const ASCII_WIDTH = '\tif (/^[\\x20-\\x7E]*$/.test(string)) {\n\t\treturn string.length;\n\t}\n\n' + STRING_WIDTH;

/** Edits to other packages' files, by their path in node_modules, as OCLIF_EDITS. */
const PACKAGE_EDITS = { 'string-width/index.js': [[STRING_WIDTH, ASCII_WIDTH]] };

/**
 * oclif's logger is the debug package's, which at load finds out whether stderr can show colours (tty, supports-color),
 * ~2 ms of every command, and writes only when DEBUG names a namespace. Without DEBUG (unset or empty: none is named)
 * each logger is a function that does nothing, and debug is never loaded.
 */
const OCLIF_DEBUG = 'const debug = (0, debug_1.default)(namespace);';
const DEBUG_ONLY_WITH_ENV = 'const debug = process.env.DEBUG ? (0, debug_1.default)(namespace) : () => { };';

/** Edits to @oclif/core's lib/ files, [text, replacement] each; the build stops if a text is not there exactly once. */
const OCLIF_EDITS = {
  'config/plugin.js': [[OCLIF_SORT, '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))'], lazyRequire('const tinyglobby_1 = require("tinyglobby");')],
  'config/plugin-loader.js': [[OCLIF_MATCH, LITERAL_MATCH], lazyRequire('const minimatch_1 = require("minimatch");')],
  'config/config.js': [lazyRequire('const ejs_1 = __importDefault(require("ejs"));')],
  'performance.js': [lazyRequire('const node_perf_hooks_1 = require("node:perf_hooks");')],
  'parser/parse.js': [lazyRequire('const node_readline_1 = require("node:readline");')],
  'help/util.js': [lazyRequire('const ejs_1 = __importDefault(require("ejs"));'), [OCLIF_RENDER, RENDER_TAGS_ONLY]],
  'ux/action/spinner.js': [lazyRequire('const cli_spinners_1 = __importDefault(require("cli-spinners"));')],
  'index.js': [OCLIF_VERSION_CHECK],
  'logger.js': [lazyRequire('const debug_1 = __importDefault(require("debug"));'), [OCLIF_DEBUG, DEBUG_ONLY_WITH_ENV]],
  'util/os.js': [lazyRequire('const node_child_process_1 = require("node:child_process");'), [OCLIF_WSL, `return ${NO_SIGN_OF_WSL} ? (0, node_os_1.platform)() : (await import('wsl-utils')).isWsl ? 'wsl' : (0, node_os_1.platform)();`]],
};
// Its real path: esbuild reports files by theirs (node_modules may be a link).
const oclifLib = realpathSync(join(root, 'node_modules', '@oclif', 'core', 'lib'));
const oclifEdited = new Set();
const nodeModules = realpathSync(join(root, 'node_modules'));
const packagesEdited = new Set();
const oclifEdits = {
  name: 'oclif-edits',
  setup(build) {
    build.onLoad({ filter: /[\\/]@oclif[\\/]core[\\/]lib[\\/].*\.js$/ }, (args) => {
      const edits = OCLIF_EDITS[relative(oclifLib, args.path).split(sep).join('/')];
      if (edits === undefined) return undefined;
      let source = readFileSync(args.path, 'utf8');
      for (const [text, replacement] of edits) {
        if (source.split(text).length !== 2) throw new Error(`${args.path} no longer has ${text}: update or drop this edit`);
        source = source.replace(text, () => replacement);
      }
      oclifEdited.add(relative(oclifLib, args.path).split(sep).join('/'));
      return { contents: source, loader: 'js' };
    });
    build.onLoad({ filter: /[\\/]node_modules[\\/].*\.js$/ }, (args) => {
      const file = relative(nodeModules, args.path).split(sep).join('/');
      const edits = PACKAGE_EDITS[file];
      if (edits === undefined) return undefined;
      let source = readFileSync(args.path, 'utf8');
      for (const [text, replacement] of edits) {
        if (source.split(text).length !== 2) throw new Error(`${args.path} no longer has ${text}: update or drop this edit`);
        source = source.replace(text, () => replacement);
      }
      packagesEdited.add(file);
      return { contents: source, loader: 'js' };
    });
  },
};

/**
 * An ES module import of a Node built-in builds the module's ESM facade, which reads every export, lazy getters
 * included: `import { Agent } from 'node:http'` loads undici (http's WebSocket), `node:crypto` the Web Crypto API,
 * `node:fs` its promises and streams, ~10 ms of a command for exports no command reads. So each built-in our code
 * and the bundled packages import is required instead (through esbuild's __require, from the banner), and only the
 * exports something imports are read from it (each export a pure read, which esbuild drops when nothing uses it).
 * Not through esbuild's CommonJS interop: it copies every export of the module at each import site, ~0.2 ms each.
 * The exports are the ones the building Node has; an import of a name it lacks fails the build.
 *
 * The modules of LOAD_ON_CALL load only when one of their functions is first called: node:crypto costs ~7 ms to
 * load (Node 24 lists its algorithms then), child_process ~2 ms, and many commands call neither. Their functions
 * are wrapped (a call goes through); what is not a plain function (a class, a constant, a function with a custom
 * promisify) is read when the module is imported, as elsewhere.
 */
const LOAD_ON_CALL = new Set(['node:crypto', 'node:child_process']);
/** A plain function among `module`'s exports, read without calling a getter (crypto's warn when read). */
function isPlainFunction(module, name) {
  const value = Object.getOwnPropertyDescriptor(module, name)?.value;
  return typeof value === 'function' && !Function.prototype.toString.call(value).startsWith('class') && Object.getOwnPropertySymbols(value).length === 0;
}
const builtinsRequired = {
  name: 'builtins-required',
  setup(build) {
    // One module per importer, which esbuild then puts in the importer's chunk: shared, each would be a chunk of
    // its own, a file more to load for each built-in a command uses.
    build.onResolve({ filter: /^[a-z_:/]+$/ }, (args) =>
      args.kind === 'import-statement' && isBuiltin(args.path) ? { path: `${args.path} for ${args.importer}`, namespace: 'builtin', pluginData: args.path } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'builtin' }, ({ pluginData: name }) => {
      const module = createRequire(import.meta.url)(name);
      const onCall = LOAD_ON_CALL.has(name.startsWith('node:') ? name : `node:${name}`);
      const exports = Object.getOwnPropertyNames(module)
        .filter((name) => name !== 'default')
        .map((name, i) => {
          const key = JSON.stringify(name);
          const value = onCall && isPlainFunction(module, name) ? `function (...args) { return builtin()[${key}].apply(this, args); }` : `/* @__PURE__ */ (() => builtin()[${key}])()`;
          return `const e${i} = ${value};\nexport { e${i} as ${key} };`;
        });
      // The module itself, loaded at the first export read: at once, but for LOAD_ON_CALL's modules, whose default
      // (a package's `import childProcess from 'node:child_process'`) reads through a proxy.
      const load = `let loaded;\nconst builtin = () => (loaded ??= require(${JSON.stringify(name)}));`;
      const defaultExport = onCall ? 'export default new Proxy({}, { get: (_, key) => builtin()[key] });' : 'export default /* @__PURE__ */ builtin();';
      return { contents: [load, defaultExport, ...exports].join('\n'), loader: 'js' };
    });
  },
};

const BANNER = "import { createRequire as __nanopayCreateRequire } from 'node:module'; const require = __nanopayCreateRequire(import.meta.url);";

const result = await build({
  absWorkingDir: root,
  entryPoints,
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  // Less source for V8 to scan at every start (~5% of a command that loads little, such as config list).
  minifyWhitespace: true,
  metafile: true,
  logLevel: 'warning',
  plugins: [oclifEdits, builtinsRequired],
  // oclif compiles TypeScript commands only in development; we ship JavaScript. The store's drivers load from
  // node_modules when a command first opens the store: better-sqlite3 finds its native addon from its own
  // location, and pg requires pg-native only if it is installed.
  external: ['typescript', 'ts-node', 'better-sqlite3', 'pg', ...UNBUNDLED],
  // CommonJS dependencies (oclif) call require(); an ES module has none of its own.
  banner: { js: BANNER },
});

// esbuild's helpers reach require through one chunk (its __require); most files never name it, and making one per
// file costs ~0.1 ms each, ~2 ms of a command. The banner goes from every file in which the word does not occur.
for (const output of Object.keys(result.metafile.outputs).filter((file) => file.endsWith('.js'))) {
  const file = join(root, output);
  const code = readFileSync(file, 'utf8');
  if (code.startsWith(`${BANNER}\n`) && !/\brequire\b/.test(code.slice(BANNER.length))) writeFileSync(file, code.slice(BANNER.length + 1));
}

const misresolved = UNBUNDLED.filter(
  (name) => createRequire(join(outdir, 'main.js')).resolve(name) !== createRequire(join(root, 'node_modules/@oclif/core/lib/index.js')).resolve(name),
);
if (misresolved.length > 0) {
  console.error(`bundle-cli: from dist/app these resolve to another copy than @oclif/core's own: ${misresolved.join(', ')}`);
  process.exit(1);
}

const unedited = [
  ...Object.keys(OCLIF_EDITS).filter((file) => !oclifEdited.has(file)).map((file) => `@oclif/core/lib/${file}`),
  ...Object.keys(PACKAGE_EDITS).filter((file) => !packagesEdited.has(file)),
];
if (unedited.length > 0) {
  console.error(`bundle-cli: these files are no longer bundled, so their edits are moot: ${unedited.join(', ')}`);
  process.exit(1);
}

// Code that finds files from its own location (import.meta.url: the native addon, the WASM kernel,
// the worker) is written for dist/<dir>/<file>.js. It must land in a file directly in dist/app,
// the same depth, never in a command's file deeper down.
const misplaced = Object.entries(result.metafile.outputs).flatMap(([output, { inputs }]) => {
  if (!relative(outdir, join(root, output)).includes(sep)) return [];
  return Object.keys(inputs)
    .filter((input) => input.startsWith('src/') && readFileSync(join(root, input), 'utf8').includes('import.meta.url'))
    .map((input) => `${input} in ${output}`);
});
if (misplaced.length > 0) {
  console.error(`bundle-cli: location-dependent code would be bundled too deep:\n  ${misplaced.join('\n  ')}`);
  process.exit(1);
}
