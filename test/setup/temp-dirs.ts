import { existsSync, rmSync } from 'node:fs';
import { afterAll } from 'vitest';
import { removeTempDirs } from '../helpers/processes/temp.js';

// A setup file runs before each test file (also where files share modules), so each file's temporary
// directories go when that file ends: after its own afterAll hooks have stopped what used them.
afterAll(removeTempDirs);

// npm test points XDG_CONFIG_HOME at a dir no test may use (each has a config dir of its own): the file that
// made it fails here, by name, instead of a leftover at the end of the run that names no file.
afterAll(() => {
  const shared = process.env.XDG_CONFIG_HOME;
  if (shared === undefined || !shared.endsWith('user-config-dir-used-by-a-test') || !existsSync(shared)) return;
  rmSync(shared, { recursive: true, force: true });
  throw new Error(`This test file used the default config dir (${shared}): give every Session and every nanopay child process a config dir of its own`);
});
