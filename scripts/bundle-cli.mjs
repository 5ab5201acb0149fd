// Bundles the CLI (entry, every command, the proof-of-work worker, the unlocked session's process) into dist/app
// with esbuild: loading a few files instead of hundreds (@oclif/core alone is about 160) is most of a
// command's start-up. tsc's dist/ stays as it is for the library (dist/index.js) and the demo.
import { readdirSync, readFileSync } from 'node:fs';
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
  // src/work/generator.ts starts workers from './pow-worker.js' beside itself.
  { in: join(root, 'src/work/pow-worker.ts'), out: 'pow-worker' },
  // src/wallet/unlocked.ts starts the unlocked session's process from './unlocked-agent.js' beside itself.
  { in: join(root, 'src/wallet/unlocked-agent.ts'), out: 'unlocked-agent' },
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
const codeUnitCommandSort = {
  name: 'code-unit-command-sort',
  setup(build) {
    build.onLoad({ filter: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (source.split(OCLIF_SORT).length !== 2) throw new Error(`${args.path} no longer has the line ${OCLIF_SORT}: update or drop this plugin`);
      return { contents: source.replace(OCLIF_SORT, '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))'), loader: 'js' };
    });
  },
};

/**
 * At every start oclif picks its core plugins from package.json's dependencies by matching each name against
 * each oclif.plugins entry with minimatch: ~45 pattern compilations, 5-10 ms of a command. Our entries are plain
 * names, for which minimatch is string equality; entries with a glob character still go to minimatch.
 */
const OCLIF_MATCH = 'patterns.some((w) => (0, minimatch_1.minimatch)(p, w))';
const literalPluginMatch = {
  name: 'literal-plugin-match',
  setup(build) {
    build.onLoad({ filter: /[\\/]@oclif[\\/]core[\\/]lib[\\/]config[\\/]plugin-loader\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (source.split(OCLIF_MATCH).length !== 2) throw new Error(`${args.path} no longer has the line ${OCLIF_MATCH}: update or drop this plugin`);
      // A glob character, an extglob's parenthesis, an escape, a negation or a comment: minimatch decides.
      const literalMatch = 'patterns.some((w) => (/[*?[\\]{}()\\\\]|^[!#]/.test(w) ? (0, minimatch_1.minimatch)(p, w) : p === w))';
      return { contents: source.replace(OCLIF_MATCH, literalMatch), loader: 'js' };
    });
  },
};

const result = await build({
  absWorkingDir: root,
  entryPoints,
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Less source for V8 to scan at every start (~5% of a command that loads little, such as config list).
  minifyWhitespace: true,
  metafile: true,
  logLevel: 'warning',
  plugins: [codeUnitCommandSort, literalPluginMatch],
  // oclif compiles TypeScript commands only in development; we ship JavaScript.
  external: ['typescript', 'ts-node'],
  // CommonJS dependencies (oclif) call require(); an ES module has none of its own.
  banner: { js: "import { createRequire as __nanopayCreateRequire } from 'node:module'; const require = __nanopayCreateRequire(import.meta.url);" },
});

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
