import { afterAll } from 'vitest';
import { lockSessions } from '../helpers/cli.js';

// Unlocked sessions (nanopay unlock) a test file started end with it, not at their expiry.
afterAll(lockSessions);
