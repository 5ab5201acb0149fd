import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as sdk from '../../src/index.js';
import { DOCS, ROOT, docText, fencedBlocks } from '../helpers/processes/docs.js';

/**
 * The docs hold together: every fenced code block is run or checked by a test (`test=NAME`), or says why not
 * (`no-run="…"`), or is a sample of output (`output`); every relative link and anchor leads somewhere; the SDK's
 * table lists everything the package exports.
 */

/** Every test file, by its name without .test.ts (test=NAME names them: test/e2e/cli/install.test.ts and test/unit/work/install.test.ts are both "install"). */
function testFiles(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const entry of readdirSync(join(ROOT, 'test'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.test.ts')) continue;
    const name = entry.name.replace(/\.test\.ts$/, '');
    found.set(name, [...(found.get(name) ?? []), join(entry.parentPath, entry.name)]);
  }
  return found;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces made hyphens; a repeat gets -1, -2… */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const text = markdown.replace(/^(`{3,}).*\n[\s\S]*?^\1\s*$/gm, '');
  for (const [, heading] of text.matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const base = (heading as string)
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

describe('the code blocks of the docs', () => {
  const blocks = DOCS.flatMap((file) => fencedBlocks(file));
  const tests = testFiles();

  it('there are blocks in every doc', () => {
    for (const file of DOCS) expect(fencedBlocks(file).length, file).toBeGreaterThan(0);
  });

  it('each is run or checked by a test, marked not runnable with a reason, or marked as output', () => {
    const unmarked = blocks.filter((b) => {
      const marks = [b.attrs.test !== undefined, b.attrs['no-run'] !== undefined, b.attrs.output !== undefined].filter(Boolean).length;
      return marks !== 1 || b.attrs['no-run'] === true || (typeof b.attrs['no-run'] === 'string' && b.attrs['no-run'].trim().length < 10);
    });
    expect(unmarked.map((b) => `${b.file}:${b.line} \`\`\`${b.info}`)).toEqual([]);
  });

  it('a block marked test=NAME is read by NAME.test.ts with docBlocks, from its file', () => {
    const missing: string[] = [];
    for (const block of blocks.filter((b) => typeof b.attrs.test === 'string')) {
      const name = block.attrs.test as string;
      const paths = tests.get(name);
      if (paths === undefined) {
        missing.push(`${block.file}:${block.line}: no test file ${name}.test.ts`);
        continue;
      }
      const reads = paths.some((path) => {
        const source = readFileSync(path, 'utf8');
        return source.includes('docBlocks(') && source.includes(`'${name}'`) && (source.includes(`'${block.file}'`) || source.includes('DOCS'));
      });
      if (!reads) missing.push(`${block.file}:${block.line}: ${name}.test.ts does not read it (docBlocks('${block.file}', '${name}'))`);
    }
    expect(missing).toEqual([]);
  });

  it('the generated reference marks its examples too', () => {
    const reference = fencedBlocks('docs/reference.md');
    expect(reference.length).toBeGreaterThan(40);
    expect(reference.every((b) => b.lang === 'sh' && typeof b.attrs['no-run'] === 'string')).toBe(true);
  });
});

describe('the guides for programs (docs/x402.md, docs/agents.md)', () => {
  const GUIDES = ['docs/x402.md', 'docs/agents.md'];

  it('run every TypeScript block in a test (test=NAME), as a program typechecked and run against the sandbox', () => {
    const notRun = GUIDES.flatMap((file) => fencedBlocks(file)).filter((b) => b.lang === 'ts' && typeof b.attrs.test !== 'string');
    expect(notRun.map((b) => `${b.file}:${b.line} \`\`\`${b.info}`)).toEqual([]);
  });

  it('name, for a block no test runs, a test file that exists', () => {
    const named = DOCS.flatMap((file) => fencedBlocks(file)).flatMap((b) =>
      typeof b.attrs['no-run'] === 'string' ? [...b.attrs['no-run'].matchAll(/\btest\/[\w./-]+\.test\.ts\b/g)].map(([path]) => ({ b, path })) : [],
    );
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter(({ path }) => !existsSync(join(ROOT, path))).map(({ b, path }) => `${b.file}:${b.line}: ${path}`)).toEqual([]);
  });
});

describe('the install the docs tell of', () => {
  // nanopay-cli is not on npm: whoever publishes the name would be run, by npx at once, with the reader's
  // environment (and any password in it). The docs install the tarball (README, Install) and start `nanopay`.
  const RUNS_FROM_REGISTRY = /\b(?:npx|npm\s+exec|pnpm\s+dlx|yarn\s+dlx|bunx)(?:\s+-[-\w=]*)*\s+(?:--\s+)?nanopay-cli\b|["']npx["'][\s\S]{0,200}?["']nanopay-cli(?:@[^"']*)?["']/;
  const INSTALLS_FROM_REGISTRY = /\b(?:npm|pnpm|yarn|bun)\s+(?:install|i|add)\b(?:\s+-[-\w=]*)*\s+nanopay-cli(?:@\S*)?(?![\w.-])/;

  it('never fetches nanopay-cli from a registry: no npx of it, no install of it by name', () => {
    const found = DOCS.flatMap((file) =>
      docText(file)
        .split(/\n\s*\n/)
        .filter((paragraph) => RUNS_FROM_REGISTRY.test(paragraph) || INSTALLS_FROM_REGISTRY.test(paragraph))
        .map((paragraph) => `${file}: ${paragraph.trim().slice(0, 160)}`),
    );
    expect(found).toEqual([]);
  });

  it('tells apart the forms that fetch it from those that install the tarball', () => {
    for (const fetches of ['npx -y nanopay-cli mcp', 'npx nanopay-cli@latest', 'npm exec -- nanopay-cli', '"command": "npx", "args": ["-y", "nanopay-cli", "mcp"]']) expect(RUNS_FROM_REGISTRY.test(fetches), fetches).toBe(true);
    for (const installs of ['npm install -g nanopay-cli', 'npm i nanopay-cli@0.1.0', 'pnpm add nanopay-cli']) expect(INSTALLS_FROM_REGISTRY.test(installs), installs).toBe(true);
    for (const fine of ['npm install -g ./nanopay-cli-0.1.0.tgz', 'npm uninstall -g nanopay-cli', 'npm install ./nanopay-cli-0.1.0.tgz @x402/fetch', 'npx nanopay', 'npm install -g --allow-scripts=nanopay-cli ./nanopay-cli-0.1.0.tgz']) {
      expect(RUNS_FROM_REGISTRY.test(fine) || INSTALLS_FROM_REGISTRY.test(fine), fine).toBe(false);
    }
  });
});

describe('the links of the docs', () => {
  it('every relative link names a file that exists, and an anchor that a heading there makes', () => {
    const broken: string[] = [];
    for (const file of DOCS) {
      const text = docText(file).replace(/^(`{3,}).*\n[\s\S]*?^\1\s*$/gm, '').replace(/`[^`\n]*`/g, '``');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target as string)) continue;
        const [path, anchor] = (target as string).split('#') as [string, string | undefined];
        const resolved = path === '' ? file : normalize(join(dirname(file), path));
        if (!existsSync(join(ROOT, resolved))) {
          broken.push(`${file}: ${target} (no ${resolved})`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchors(docText(resolved)).has(anchor)) broken.push(`${file}: ${target} (no heading makes #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README links to every guide', () => {
    const readme = docText('README.md');
    for (const file of DOCS.filter((f) => f.startsWith('docs/'))) expect(readme, file).toContain(`](${file})`);
  });
});

describe("the SDK's table (docs/wallet.md)", () => {
  it('names every value the package exports', () => {
    const section = docText('docs/wallet.md').split('## In a program: the SDK')[1] ?? '';
    const missing = Object.keys(sdk).filter((name) => !section.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });
});
