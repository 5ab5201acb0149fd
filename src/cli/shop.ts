import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readPrivateFile } from '../fs/secure-fs.js';
import { DEFAULT_PROFILE, type Session } from '../ops/session.js';
import { profileKey } from '../wallet/send-log.js';
import { nodeStatusSource, serviceStatusSource, type ShopStatusSource } from '../shop/monitor.js';
import { configDir } from '../wallet/paths.js';
import { ownToken } from './server-access.js';

/**
 * A shop file of the profile in the config dir: `name.ext` for the default profile (as it always was), and
 * `name-KEY.ext` for another (profile names are free text): one profile's token or secret never opens another's shop.
 */
function profileFile(profile: string, name: string, ext: string): string {
  return join(configDir(process.env), profile === DEFAULT_PROFILE ? `${name}.${ext}` : `${name}-${profileKey(profile).slice(0, 16)}.${ext}`);
}

/** The shop API's bearer token: read from `file` (default the profile's checkout.token in the config dir), made (random, 0600) when absent. */
export async function shopToken(file: string | undefined, profile: string): Promise<{ token: string; file: string }> {
  const path = file ?? profileFile(profile, 'checkout', 'token');
  return { token: await ownToken(path), file: path };
}

/**
 * The webhook signing secrets: the lines of `file` (default webhook.secret in the config dir, made when absent),
 * the current one first; while rotating, the file holds the new and the old, and each event carries a v1 for both.
 */
export async function webhookSecrets(file: string | undefined, profile: string): Promise<{ secrets: string[]; file: string; current: () => Promise<string[]> }> {
  const path = file ?? profileFile(profile, 'webhook', 'secret');
  await ownToken(path);
  const read = async (): Promise<string[]> =>
    (await readPrivateFile(path))
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.length > 0);
  let secrets = await read();
  let seen = identity(await stat(path));
  // Read again when the file changed: a rotation takes effect at the next delivery, not at a restart. A file
  // that is gone, empty or no longer private meanwhile leaves the secrets it last held in use.
  const current = async (): Promise<string[]> => {
    const now = await stat(path).then(identity, () => seen);
    if (now === seen) return secrets;
    const next = await read().catch(() => []);
    if (next.length > 0) [secrets, seen] = [next, now];
    return secrets;
  };
  return { secrets, file: path, current };
}

function identity(info: Stats): string {
  return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
}

/** Where the shop's requests' statuses come from: nanopay's verified view on a node, the service otherwise. */
export async function shopStatusSource(session: Session): Promise<ShopStatusSource> {
  if (session.backendKind() === 'node') return nodeStatusSource({ dataStore: () => session.dataStore() }, await session.nodeClient());
  return serviceStatusSource(await session.serviceApi());
}
