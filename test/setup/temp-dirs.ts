import { afterAll } from 'vitest';
import { removeTempDirs } from '../helpers/temp.js';

// A setup file runs before each test file (also where files share modules), so each file's temporary
// directories go when that file ends: after its own afterAll hooks have stopped what used them.
afterAll(removeTempDirs);
