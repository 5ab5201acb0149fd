import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser } from '../../helpers/ledger/backend-users.js';
import { docBlocks } from '../../helpers/processes/docs.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { until } from '../../helpers/network/webhook-receiver.js';
import { freePort } from '../../helpers/network/free-port.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** The shop guide's shop: its block marked test=readme-shop. */
function shopExample(): string {
  const [block, ...more] = docBlocks('docs/shop.md', 'readme-shop');
  if (more.length > 0 || block?.lang !== 'js') throw new Error('docs/shop.md: one js block is the shop example');
  return block.code;
}

let sb: RunningSandbox;
let serve: RunningCommand<{ url: string; token_file: string; webhook_secret_file: string }> | undefined;
let shop: ChildProcess | undefined;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  shop?.kill();
  await serve?.stop();
  await sb?.close();
  await shutdownWorkers();
});

describe("the shop guide's example (docs/shop.md)", () => {
  it('is at most 30 lines of code, and sells: request from the backend, redirect, signed webhook, ship', async () => {
    const code = shopExample();
    expect(code.split('\n').filter((line) => line.trim() !== '' && !line.trim().startsWith('//')).length).toBeLessThanOrEqual(30);
    const merchant = await backendUser(sb, 'node');
    const payer = await fundedUser(sb, 'node', '2');
    const port = await freePort();
    serve = await startCommand(['checkout', 'serve', '--json', '--webhook', `http://127.0.0.1:${port}/webhooks/nanopay`], merchant.user.env);
    // The example as written; only its import is pointed at this checkout's build (a shop has nanopay-cli installed).
    const dir = await tempDir('nanopay-shop-');
    await writeFile(join(dir, 'shop.mjs'), code.replace("from 'nanopay-cli'", `from '${pathToFileURL(join(root, 'dist/index.js')).href}'`));
    let out = '';
    shop = spawn(process.execPath, ['shop.mjs'], {
      cwd: dir,
      env: { PATH: process.env.PATH, PORT: String(port), NANOPAY_SERVER: serve.printed.url, NANOPAY_TOKEN_FILE: serve.printed.token_file, NANOPAY_WEBHOOK_SECRET_FILE: serve.printed.webhook_secret_file },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    shop.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    shop.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    let bought: Response | undefined;
    await until(async () => {
      bought = await fetch(`http://127.0.0.1:${port}/buy`, { method: 'POST', redirect: 'manual' }).catch(() => undefined);
      return bought !== undefined;
    }, 'the shop to listen');
    expect(bought?.status).toBe(303);
    const checkoutUrl = bought?.headers.get('location') as string;
    expect(checkoutUrl).toMatch(new RegExp(`^${serve.printed.url}/checkout/`));
    // The customer's page, and the payment it asks for.
    const page = await (await fetch(checkoutUrl)).text();
    const uri = /href="(nano:[^"]+)"/.exec(page)?.[1]?.replaceAll('&amp;', '&') as string;
    expect(page).toContain('Order order-42');
    await payUri(payer.session, uri, {});
    await until(() => out.includes('ship order-42'), 'the shop to ship', 30_000);
    // A forged webhook is refused.
    const forged = await fetch(`http://127.0.0.1:${port}/webhooks/nanopay`, { method: 'POST', body: '{"type":"request.paid"}', headers: { 'nanopay-signature': 't=1,v1=00' } });
    expect(forged.status).toBe(400);
    expect(out.match(/ship order-42/g)).toHaveLength(1);
  });
});
