import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import type { CliUser } from '../processes/cli.js';
import { startCommand } from '../processes/serve.js';
import { tempDir } from '../processes/temp.js';

// jsqr is CommonJS: under NodeNext its typed default export sits on `.default`.
const jsQR = jsqr.default;

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Whether the browser tests run: always in CI (where a missing Chromium is a
 * failure), elsewhere only when Chromium is installed, and never silently skipped.
 */
export function browserAvailability(): { available: boolean; inCi: boolean; reason?: string } {
  const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
  if (existsSync(CHROMIUM)) return { available: true, inCi };
  return { available: false, inCi, reason: `${CHROMIUM} is missing (install it with: apt-get install chromium)` };
}

/** Headless Chromium with nothing that phones home (this machine's network is closed). */
export async function launchChromium(): Promise<import('playwright-core').Browser> {
  // require, not import(): Node's import() of this CommonJS package scans its 3.6 MB bundle for export names first
  // (0.3 s of CPU, measured here).
  const { chromium } = createRequire(import.meta.url)('playwright-core') as typeof import('playwright-core');
  // Chromium keeps crash reports and caches under XDG_CONFIG_HOME / XDG_CACHE_HOME (or HOME) whatever its profile dir:
  // a temporary dir of the test's, never the machine user's.
  const home = await tempDir('nanopay-chromium-home-');
  return chromium.launch({
    executablePath: CHROMIUM,
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_CACHE_HOME: join(home, '.cache') },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * The text of the QR code in a PNG screenshot, or undefined. Given the region the code is drawn in (CSS pixels at
 * scale 1), only that part, with a margin, is searched: a 1280x800 screenshot takes jsQR ten times as long.
 */
export function readQr(png: Buffer, region?: { x: number; y: number; width: number; height: number }): string | undefined {
  const image = PNG.sync.read(png);
  const margin = 16;
  const left = region === undefined ? 0 : Math.max(0, Math.floor(region.x) - margin);
  const top = region === undefined ? 0 : Math.max(0, Math.floor(region.y) - margin);
  const right = region === undefined ? image.width : Math.min(image.width, Math.ceil(region.x + region.width) + margin);
  const bottom = region === undefined ? image.height : Math.min(image.height, Math.ceil(region.y + region.height) + margin);
  const width = right - left;
  const pixels = new Uint8ClampedArray(width * (bottom - top) * 4);
  for (let row = top; row < bottom; row++) pixels.set(image.data.subarray((row * image.width + left) * 4, (row * image.width + right) * 4), (row - top) * width * 4);
  // The page draws the code dark on white, as phones' scanners expect: an inverted code is not read (nor looked for,
  // a third of jsQR's time).
  return jsQR(pixels, width, bottom - top, { inversionAttempts: 'dontInvert' })?.data;
}

export interface CheckoutProcess {
  url: string;
  transaction_id: string;
  amount: string;
  receive_address: string;
  stderr: () => string;
  stop(): Promise<void>;
}

/** Runs `nanopay checkout … --json` as a child process and waits for its one document. */
export async function startCheckout(user: CliUser, args: string[]): Promise<CheckoutProcess> {
  const running = await startCommand<Omit<CheckoutProcess, 'stderr' | 'stop'>>(['checkout', ...args, '--json'], user.env);
  return { ...running.printed, stderr: running.stderr, stop: running.stop };
}

/** A shop's thank-you page on loopback: where a paid checkout sends the customer. */
export async function startShop(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Thanks</title><link rel="icon" href="data:,"><h1>Thank you for your order</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
