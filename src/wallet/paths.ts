import { homedir } from 'node:os';
import { join } from 'node:path';

/** The config dir: NANOPAY_CONFIG_DIR, else the platform's user config location. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.NANOPAY_CONFIG_DIR) return env.NANOPAY_CONFIG_DIR;
  if (process.platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'nanopay');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Preferences', 'nanopay');
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'nanopay');
}

export const keystorePath = (dir: string): string => join(dir, 'keystore.json');
export const stateDir = (dir: string, kind: 'locks' | 'journal' | 'sends' | 'requests' | 'store' | 'contacts' | 'history' | 'x402' | 'lanes'): string => join(dir, kind);
