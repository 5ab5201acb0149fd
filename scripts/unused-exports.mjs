// Finds the modules under src/ that export a value (function, class, constant) no other module of src/ uses:
// dead code, or code kept alive only by tests. Types stay free to export: they describe the signatures of what
// is used. Entry points are the roots: the SDK (src/index.ts, whose exports the README documents), the commands,
// hooks and help class (loaded by oclif), and the programs started by file (the CLI entry and its compile cache, the demo, the
// proof-of-work worker, the unlocked session's process); what the benchmarks and scripts/ import from the build counts as used.
// Each module is read as esbuild compiles it, so types and the imports only types use are gone; what remains is
// lexed by es-module-lexer. A relative import from src/ must stay inside src/, as the build's rootDir requires.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { transformSync } from 'esbuild';
import { init, parse } from 'es-module-lexer';

const ENTRY = [/^src\/index\.ts$/, /^src\/commands\//, /^src\/hooks\//, /^src\/cli\/help\.ts$/, /^src\/cli\/main\.ts$/, /^src\/cli\/compile-cache\.ts$/, /^src\/demo\/main\.ts$/, /^src\/work\/pow-worker\.ts$/, /^src\/work\/measure-kernels\.ts$/, /^src\/session\/process\.ts$/];
const NAME = String.raw`[A-Za-z_$][\w$]*`;

/** The module a relative specifier names: src/x/y.ts for './y.js' from src/x/, or where outside src/ it points. */
function target(root, from, specifier) {
  const path = resolve(dirname(join(root, from)), specifier);
  return { module: relative(root, path.replace(/\.js$/, '.ts')).split(sep).join('/'), inSrc: path.startsWith(join(root, 'src') + sep) };
}

/** The names `import ... from` binds: default, a namespace, or named ones (`a as b` binds b from a). */
function importClause(statement) {
  const clause = /^import\s*([\s\S]*?)\s*from\s*["']/.exec(statement)?.[1] ?? '';
  const namespace = new RegExp(`\\*\\s*as\\s+(${NAME})`).exec(clause)?.[1];
  const braces = /\{([^}]*)\}/.exec(clause)?.[1];
  const named = braces === undefined ? [] : braces.split(',').map((part) => part.trim().split(/\s+as\s+/)[0]).filter(Boolean);
  const defaultName = new RegExp(`^(${NAME})\\s*(?:,|$)`).exec(clause)?.[1];
  return { names: defaultName === undefined ? named : ['default', ...named], namespace };
}

/**
 * The names `ns.name` reads of a namespace in the code after its binding, or undefined when the namespace itself
 * is passed around.
 */
function namespaceReads(code, namespace) {
  const uses = [...code.matchAll(new RegExp(`(?<![\\w$./])${namespace.replace(/\$/g, '\\$')}\\b(\\s*\\.\\s*(${NAME}))?`, 'g'))];
  return uses.every((use) => use[2] !== undefined) ? uses.map((use) => use[2]) : undefined;
}

/** @returns {Promise<{ modules: number, error?: string }>} error: what to print when the check fails */
export async function unusedExports(root) {
  await init();
  const files = readdirSync(join(root, 'src'), { recursive: true })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => `src/${file.split(sep).join('/')}`);
  const modules = new Map();
  for (const file of files) {
    const { code } = transformSync(readFileSync(join(root, file), 'utf8'), { loader: 'ts', format: 'esm', target: 'es2022' });
    const [imports, exports] = parse(code, file);
    modules.set(file, { code, imports, exports });
  }

  const used = new Set();
  const problems = [];
  const key = (module, name) => `${module}\0${name}`;
  const provides = (module, name, seen = new Set()) => {
    const found = modules.get(module);
    if (found === undefined || seen.has(module)) return false;
    seen.add(module);
    return found.exports.some((e) => e.name === name || (e.type === 'reexport-all' && provides(target(root, module, e.from).module, name, seen)));
  };
  const useAll = (module, seen = new Set()) => {
    if (seen.has(module)) return;
    seen.add(module);
    for (const e of modules.get(module)?.exports ?? []) {
      if (e.type === 'reexport-all') useAll(target(root, module, e.from).module, seen);
      else used.add(key(module, e.name));
    }
  };

  for (const [file, { code, imports, exports }] of modules) {
    for (const record of imports) {
      if (record.specifier === null || !record.specifier.startsWith('.')) continue;
      const { module, inSrc } = target(root, file, record.specifier);
      if (!inSrc) {
        problems.push(`${file} imports ${record.specifier}, outside src/ (the build compiles src/ only)`);
        continue;
      }
      if (!modules.has(module)) continue;
      if (record.type === 'dynamic') {
        // `const { a, b: c } = await import('./x.js')` or `const ns = await import('./x.js')`, then ns.a.
        const binding = new RegExp(`(?:const|let)\\s+(\\{[^}]*\\}|${NAME})\\s*=\\s*await\\s*$`).exec(code.slice(0, record.importStart))?.[1];
        const names = binding === undefined ? undefined
          : binding.startsWith('{') ? binding.slice(1, -1).split(',').map((part) => part.trim().split(/\s*:\s*/)[0]).filter(Boolean)
          : namespaceReads(code.slice(record.importEnd), binding);
        if (names === undefined) problems.push(`${file}: cannot tell which names its import('${record.specifier}') uses (bind them with const { ... } = await import(), or read them as ns.name)`);
        else for (const name of names) used.add(key(module, name));
        continue;
      }
      const statement = code.slice(record.importStart, record.importEnd);
      if (!statement.startsWith('import')) continue;
      const { names, namespace } = importClause(statement);
      for (const name of names) used.add(key(module, name));
      if (namespace !== undefined) {
        const reads = namespaceReads(code.slice(record.importEnd), namespace);
        if (reads === undefined) useAll(module);
        else for (const name of reads) used.add(key(module, name));
      }
    }
    // A re-export uses what it passes on.
    for (const e of exports) {
      if (e.type === 'reexport-all') useAll(target(root, file, e.from).module);
      else if (e.type === 'reexport' && e.from.startsWith('.')) {
        const { module } = target(root, file, e.from);
        if (e.importName === '*') useAll(module);
        else used.add(key(module, e.importName));
      }
    }
  }

  // The benchmarks and the build's scripts (the reference's writer) import the built modules (../dist/X.js is
  // src/X.ts): what they import counts as used, and a name the module no longer exports is an error here, not when
  // a bench or script runs.
  for (const dir of ['bench', 'scripts']) {
    const path = join(root, dir);
    for (const name of existsSync(path) ? readdirSync(path).filter((f) => f.endsWith('.mjs')) : []) {
      const text = readFileSync(join(path, name), 'utf8');
      for (const [, names, built] of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'\.\.\/dist\/([^']+)\.js'/g)) {
        const module = `src/${built}.ts`;
        for (const imported of names.split(',').map((n) => n.trim().split(/\s+as\s+/)[0]).filter(Boolean)) {
          if (provides(module, imported)) used.add(key(module, imported));
          else problems.push(`${dir}/${name}: ${module} does not export ${imported}`);
        }
      }
    }
  }
  if (problems.length > 0) return { modules: modules.size, error: `The unused-exports check cannot pass:\n  ${problems.join('\n  ')}` };

  const unused = [];
  for (const [file, { exports }] of modules) {
    if (ENTRY.some((pattern) => pattern.test(file))) continue;
    for (const e of exports) if (e.type === 'direct' && !used.has(key(file, e.name))) unused.push(`${file}: ${e.name}`);
  }
  if (unused.length > 0) {
    return { modules: modules.size, error: `Exported but used by no other module of src/ (remove them, or stop exporting them):\n  ${unused.join('\n  ')}` };
  }
  return { modules: modules.size };
}
