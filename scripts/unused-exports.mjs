// Finds the modules under src/ that export a value (function, class, constant) no other module of src/ uses:
// dead code, or code kept alive only by tests. Types stay free to export: they describe the signatures of what
// is used. Entry points are the roots: the SDK (src/index.ts, whose exports the README documents), the commands,
// hooks and help class (loaded by oclif), and the programs started by file (the CLI entry, the demo, the
// proof-of-work worker, the unlocked session's process); what the benchmarks import from the build counts as used.
// It takes a program rather than making one so that scripts/typescript.mjs can run it on the program it type-checks
// with (test files in it are never walked, so a use by a test keeps nothing alive).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ENTRY = [/^src\/index\.ts$/, /^src\/commands\//, /^src\/hooks\//, /^src\/cli\/help\.ts$/, /^src\/cli\/main\.ts$/, /^src\/demo\/main\.ts$/, /^src\/work\/pow-worker\.ts$/, /^src\/wallet\/unlocked-agent\.ts$/];

/** @returns {{ modules: number, error?: string }} error: what to print when the check fails */
export function unusedExports(program, root) {
  const checker = program.getTypeChecker();
  const sources = program.getSourceFiles().filter((f) => f.fileName.startsWith(resolve(root, 'src')));
  const isEntry = (file) => ENTRY.some((pattern) => pattern.test(relative(root, file.fileName)));

  const resolved = (symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
  const used = new Set();

  for (const file of sources) {
    const visit = (node) => {
      // Every name another module refers to through an import or a re-export.
      if (ts.isImportSpecifier(node) || ts.isExportSpecifier(node) || ts.isImportClause(node) || ts.isNamespaceImport(node)) {
        const symbol = checker.getSymbolAtLocation(node.name ?? node);
        if (symbol !== undefined) used.add(resolved(symbol));
      }
      if (ts.isExportDeclaration(node) && node.exportClause === undefined && node.moduleSpecifier !== undefined) {
        const target = checker.getSymbolAtLocation(node.moduleSpecifier);
        if (target !== undefined) for (const s of checker.getExportsOfModule(target)) used.add(resolved(s));
      }
      // import('./x.js') used as a type or value.
      if (ts.isImportTypeNode(node) || (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)) {
        node.forEachChild(visit);
        return;
      }
      node.forEachChild(visit);
    };
    visit(file);
    // Names of a namespace import used as `ns.name` count too.
    const walk = (node) => {
      if (ts.isPropertyAccessExpression(node)) {
        const symbol = checker.getSymbolAtLocation(node.name);
        if (symbol !== undefined) used.add(resolved(symbol));
      }
      node.forEachChild(walk);
    };
    walk(file);
  }

  // The benchmarks import the built modules (../dist/X.js is src/X.ts): what they import counts
  // as used, and a name the module no longer exports is an error here, not when a bench runs.
  const broken = [];
  const benchDir = resolve(root, 'bench');
  for (const name of readdirSync(benchDir).filter((f) => f.endsWith('.mjs'))) {
    const text = readFileSync(join(benchDir, name), 'utf8');
    for (const [, names, path] of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'\.\.\/dist\/([^']+)\.js'/g)) {
      const file = program.getSourceFile(resolve(root, 'src', `${path}.ts`));
      const moduleSymbol = file === undefined ? undefined : checker.getSymbolAtLocation(file);
      const exported = moduleSymbol === undefined ? [] : checker.getExportsOfModule(moduleSymbol);
      for (const imported of names.split(',').map((n) => n.trim().split(/\s+as\s+/)[0]).filter(Boolean)) {
        const symbol = exported.find((e) => e.getName() === imported);
        if (symbol === undefined) broken.push(`bench/${name}: src/${path}.ts does not export ${imported}`);
        else used.add(resolved(symbol));
      }
    }
  }
  if (broken.length > 0) return { modules: sources.length, error: `A benchmark imports what src/ does not export:\n  ${broken.join('\n  ')}` };

  const unused = [];
  for (const file of sources) {
    if (isEntry(file)) continue;
    const moduleSymbol = checker.getSymbolAtLocation(file);
    if (moduleSymbol === undefined) continue;
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      const isValue = (resolved(symbol).flags & ts.SymbolFlags.Value) !== 0;
      if (isValue && !used.has(resolved(symbol))) unused.push(`${relative(root, file.fileName)}: ${symbol.getName()}`);
    }
  }
  if (unused.length > 0) {
    return { modules: sources.length, error: `Exported but used by no other module of src/ (remove them, or stop exporting them):\n  ${unused.join('\n  ')}` };
  }
  return { modules: sources.length };
}
