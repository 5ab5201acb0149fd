// The TypeScript program of the build and of npm test. Type-checking is most of the time of either, so it is done
// once: one program over src/ (and with `check` test/ and vitest.config.ts too) gives the diagnostics of
// `tsc -p tsconfig.build.json` and `tsc --noEmit -p .`, emits src/ as the former does (with `emit`), and serves the
// unused-exports check (scripts/unused-exports.mjs). Type errors are printed as tsc prints them.
import { join, resolve, sep } from 'node:path';
import ts from 'typescript';
import { unusedExports } from './unused-exports.mjs';

const root = resolve(import.meta.dirname, '..');
const srcDir = join(root, 'src') + sep;
const pretty = process.stderr.isTTY === true;

function parseConfig(name) {
  const errors = [];
  const config = ts.getParsedCommandLineOfConfigFile(join(root, name), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => errors.push(d) });
  return { config, errors: [...errors, ...(config?.errors ?? [])] };
}

function format(diagnostics) {
  const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => process.cwd(), getNewLine: () => '\n' };
  return pretty ? ts.formatDiagnosticsWithColorAndContext(diagnostics, host) : ts.formatDiagnostics(diagnostics, host);
}

/**
 * @param {{ check: boolean, emit: boolean, log?: (line: string) => void }} options check: type-check test/ and
 *   vitest.config.ts too and run the unused-exports check; emit: write src/'s JavaScript and declarations to dist/
 *   as `tsc -p tsconfig.build.json`; log: where the check's success line goes
 * @returns {string[]} the failures to print
 */
export function typescript({ check, emit, log = console.log }) {
  const build = parseConfig('tsconfig.build.json');
  const all = check ? parseConfig('tsconfig.json') : build;
  const configErrors = [...build.errors, ...(check ? all.errors : [])];
  if (build.config === undefined || all.config === undefined) return [format(configErrors)];
  // test/ is checked with the build's options, so they must be tsconfig.json's but for rootDir.
  const others = ({ rootDir, configFilePath, ...rest }) => JSON.stringify(Object.entries(rest).sort(([a], [b]) => a.localeCompare(b)));
  if (others(build.config.options) !== others(all.config.options)) {
    return ['tsconfig.build.json may set only rootDir and include: the other options must be tsconfig.json\'s, which test/ is checked with'];
  }

  const rootNames = [...new Set([...all.config.fileNames, ...build.config.fileNames])];
  const program = ts.createProgram({ rootNames, options: build.config.options, configFileParsingDiagnostics: configErrors });
  // What `tsc -p tsconfig.build.json` compiles and emits: src/ and what it imports. Its files are the ones
  // parsed for the whole program, so this costs module resolution only.
  const host = ts.createCompilerHost(build.config.options);
  const readSourceFile = host.getSourceFile;
  host.getSourceFile = (fileName, ...rest) => program.getSourceFile(fileName) ?? readSourceFile.call(host, fileName, ...rest);
  const built = check ? ts.createProgram({ rootNames: build.config.fileNames, options: build.config.options, host }) : program;
  const compiled = new Set(built.getSourceFiles().filter((f) => !f.isDeclarationFile && !built.isSourceFileFromExternalLibrary(f)));
  if ([...compiled].some((f) => !f.fileName.startsWith(srcDir))) {
    // src/ imports a file outside it, which the build cannot emit: rare enough to check src/ again for tsc's
    // own words, which name the importing line.
    const rootDirErrors = [...built.getOptionsDiagnostics(), ...[...compiled].flatMap((f) => built.getSemanticDiagnostics(f))].filter((d) => d.code === 6059);
    return [format(ts.sortAndDeduplicateDiagnostics(rootDirErrors))];
  }

  // TS6059 is the check above: with `check` it would also be said of every file of test/, rightly outside rootDir.
  const relevant = (diagnostics) => diagnostics.filter((d) => d.code !== 6059);
  // Semantic diagnostics only when the files parsed and the options hold, as tsc does.
  const diagnostics = [...configErrors, ...program.getSyntacticDiagnostics(), ...relevant(program.getOptionsDiagnostics()), ...program.getGlobalDiagnostics()];
  if (diagnostics.length === configErrors.length) diagnostics.push(...relevant(program.getSemanticDiagnostics()));
  const clean = diagnostics.length === configErrors.length;
  // Emitted even with errors, as tsc does; an emit's diagnostics are its declaration file's. `tsc --noEmit -p .`
  // reports those of the other files too (declaration is on): a test's export whose type cannot be named.
  for (const file of program.getSourceFiles()) {
    if (emit && compiled.has(file)) diagnostics.push(...program.emit(file).diagnostics);
    else if (check && clean) diagnostics.push(...program.getDeclarationDiagnostics(file));
  }
  if (diagnostics.length > 0) {
    const count = ts.sortAndDeduplicateDiagnostics(diagnostics).length;
    return [`${format(ts.sortAndDeduplicateDiagnostics(diagnostics))}\nFound ${count} error${count === 1 ? '' : 's'}.`];
  }
  if (!check) return [];
  const exports = unusedExports(program, root);
  if (exports.error !== undefined) return [exports.error];
  log(`check-exports: every export of ${exports.modules} modules is used`);
  return [];
}
