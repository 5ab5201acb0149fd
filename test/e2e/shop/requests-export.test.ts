import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { docBlocks } from '../../helpers/processes/docs.js';
import { startRateSource, type RateSource } from '../../helpers/network/rate-source.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { until } from '../../helpers/network/webhook-receiver.js';

/**
 * Exports for the accountant (issue 33, point 3): `nanopay requests export` (the built CLI) and
 * GET /api/v1/requests/export of checkout serve, on both backends of the sandbox.
 */
let sb: RunningSandbox;
let rates: RateSource;

beforeAll(async () => {
  sb = await sandbox();
  rates = await startRateSource();
});

afterAll(async () => {
  await rates?.close();
  await sb?.close();
  await shutdownWorkers();
});

const COLUMNS = [
  'id',
  'order_id',
  'status',
  'is_paid',
  'created_at',
  'expires_at',
  'paid_at',
  'refunded_at',
  'amount',
  'amount_raw',
  'received_amount',
  'received_amount_raw',
  'fiat_currency',
  'fiat_amount',
  'fiat_rate',
  'rate_source',
  'rate_time',
  'receive_address',
  'paying_blocks',
  'payer_accounts',
  'refund_blocks',
  'refunded_amount',
  'refunded_amount_raw',
  'metadata',
];

/** RFC 4180, strictly: CRLF after every record, quoted fields with doubled quotes; anything else fails the test. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let i = 0;
  while (i < text.length) {
    const record: string[] = [];
    for (;;) {
      let value = '';
      if (text[i] === '"') {
        for (i++; ; i++) {
          if (i >= text.length) throw new Error('an unterminated quoted field');
          if (text[i] === '"' && text[i + 1] === '"') (value += '"'), i++;
          else if (text[i] === '"') break;
          else value += text[i];
        }
        i++;
      } else {
        while (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') {
          if (text[i] === '"') throw new Error(`a quote inside an unquoted field at ${i}`);
          value += text[i++];
        }
      }
      record.push(value);
      if (text[i] === ',') i++;
      else if (text.startsWith('\r\n', i)) {
        i += 2;
        break;
      } else throw new Error(`a record not ended by CRLF at ${i}: ${JSON.stringify(text.slice(i, i + 10))}`);
    }
    records.push(record);
  }
  return records;
}

const rowsOf = (csv: string): Record<string, string>[] => {
  const [header, ...rows] = parseCsv(csv);
  expect(header).toEqual(COLUMNS);
  return rows.map((row) => {
    expect(row).toHaveLength(COLUMNS.length);
    return Object.fromEntries(COLUMNS.map((name, i) => [name, row[i] as string]));
  });
};

interface Printed {
  url: string;
  token_file: string;
}

describe.each(BACKENDS)('requests export on the %s backend', (backend) => {
  let merchant: BackendUser;
  let server: RunningCommand<Printed>;
  let token: string;
  type Made = Record<string, unknown> & { id: string; created_at: string; uri: string };
  let made: { evil: Made; euro: Made; paid: Made };
  let paidHash = '';
  let payerAddress = '';

  const post = async (body: unknown): Promise<Made> => {
    const response = await fetch(`${server.printed.url}/api/v1/requests`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return ((await response.json()) as { data: Made }).data;
  };
  const exported = (query: string, auth = token) => fetch(`${server.printed.url}/api/v1/requests/export${query}`, { headers: { authorization: `Bearer ${auth}` } });

  beforeAll(async () => {
    merchant = await backendUser(sb, backend);
    const payer = await fundedUser(sb, backend, '3');
    payerAddress = payer.address;
    expect((await merchant.user.run(['config', 'set', 'rate-source', rates.url])).code).toBe(0);
    server = await startCommand<Printed>(['checkout', 'serve', '--json', '--poll-interval', '1'], merchant.user.env);
    token = readFileSync(server.printed.token_file, 'utf8').trim();
    // A customer's order id that a spreadsheet would run, and metadata with every character CSV must quote.
    made = {
      evil: await post({ amount: '0.1', order_id: '=HYPERLINK("http://evil.example","x")', metadata: { note: 'a, "quoted"\r\nline', 'ünï': '€' } }),
      euro: await post({ amount: '1.5', currency: 'EUR', order_id: 'B-2' }),
      paid: await post({ amount: '0.2', order_id: '-3' }),
    };
    paidHash = (await payUri(payer.session, made.paid.uri as string, {})).hash as string;
    await until(async () => {
      const response = await fetch(`${server.printed.url}/api/v1/requests/${made.paid.id as string}`, { headers: { authorization: `Bearer ${token}` } });
      return ((await response.json()) as { data: { status: string } }).data.status === 'paid';
    }, 'the request paid');
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('CSV a spreadsheet opens as is: BOM, RFC 4180, ISO times, one row per request oldest first, formulas neutralised, prices and payments in their columns', async () => {
    const result = await merchant.user.run(['requests', 'export']);
    expect(result.code).toBe(0);
    expect(result.stdout.startsWith('\uFEFFid,order_id,status,')).toBe(true);
    const rows = rowsOf(result.stdout.slice(1));
    expect(rows.map((r) => r.id)).toEqual([made.evil.id, made.euro.id, made.paid.id]);
    const [evil, euro, paid] = rows as [Record<string, string>, Record<string, string>, Record<string, string>];
    // Neutralised with an apostrophe (a spreadsheet shows it as text), and quoted as RFC 4180 wants.
    expect(evil.order_id).toBe(`'${made.evil.order_id as string}`);
    expect(JSON.parse(evil.metadata as string)).toEqual({ note: 'a, "quoted"\r\nline', ünï: '€' });
    expect(evil).toMatchObject({ status: 'waiting', amount: made.evil.amount, amount_raw: made.evil.amount_raw, fiat_currency: '', paid_at: '', paying_blocks: '', payer_accounts: '' });
    expect(evil.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const fiat = made.euro.fiat as Record<string, string>;
    expect(euro).toMatchObject({ order_id: 'B-2', fiat_currency: 'EUR', fiat_amount: '1.5', fiat_rate: fiat.rate, rate_source: rates.url, rate_time: fiat.rate_time, amount: made.euro.amount, metadata: '{}' });
    expect(paid).toMatchObject({ order_id: "'-3", status: 'paid', paying_blocks: paidHash, payer_accounts: payerAddress, receive_address: made.paid.receive_address });
    expect(Date.parse(paid.paid_at as string)).toBeGreaterThanOrEqual(Date.parse(paid.created_at as string));
    // Paid or not, what arrived and what went back, on every row: nothing refunded yet.
    expect([evil.is_paid, evil.received_amount, evil.received_amount_raw]).toEqual(['false', '0', '0']);
    expect([paid.is_paid, paid.received_amount, paid.received_amount_raw]).toEqual(['true', made.paid.amount, made.paid.amount_raw]);
    for (const row of rows) expect([row.refunded_at, row.refund_blocks, row.refunded_amount, row.refunded_amount_raw]).toEqual(['', '', '0', '0']);
  });

  it('the API answers the same bytes as the CLI, streamed, behind the token; JSON has the same columns', async () => {
    const cli = await merchant.user.run(['requests', 'export', '--status', 'waiting']);
    const api = await exported('?status=waiting');
    expect(api.status).toBe(200);
    expect(api.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(api.headers.get('transfer-encoding')).toBe('chunked');
    // fetch's text() drops a leading BOM: the bytes are compared.
    expect(Buffer.from(await api.arrayBuffer()).toString('utf8')).toBe(cli.stdout);

    const json = (await (await exported('?format=json')).json()) as Record<string, unknown>[];
    expect(json.map((r) => Object.keys(r))).toEqual([COLUMNS, COLUMNS, COLUMNS]);
    expect(json[2]).toMatchObject({ id: made.paid.id, order_id: '-3', paying_blocks: [paidHash], payer_accounts: [payerAddress], refunded_at: null, refund_blocks: [], fiat_currency: null });
    expect(json[1]).toMatchObject({ fiat_currency: 'EUR', fiat_amount: '1.5' });
    expect(await merchant.user.json<unknown[]>(['requests', 'export'])).toMatchObject({ 0: json[0], 1: json[1], 2: json[2], _code: 0 });
    // ndjson: the same rows, one per line, from the API and the CLI alike.
    const lines = await exported('?format=ndjson');
    expect(lines.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const ndjson = await lines.text();
    expect(ndjson.trimEnd().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual(json);
    expect((await merchant.user.run(['requests', 'export', '--format', 'ndjson'])).stdout).toBe(ndjson);

    expect((await exported('', 'not-the-token-not-the-token')).status).toBe(401);
    expect(await (await exported('?status=lost')).json()).toMatchObject({ success: false, error: { error: 'INVALID_REQUEST' } });
    expect((await exported('?from=2026-02-30')).status).toBe(400);
    expect((await exported('?format=xlsx')).status).toBe(400);
  });

  it('filters by creation time (UTC; a date alone as --to takes that day in) and status; --no-bom for programs; bad filters refused', async () => {
    const created = (made.evil.created_at as string).slice(0, 10);
    const count = async (args: string[]): Promise<number> => {
      const result = await merchant.user.run(['requests', 'export', '--no-bom', ...args]);
      expect(result.code).toBe(0);
      expect(result.stdout.startsWith('id,')).toBe(true);
      return rowsOf(result.stdout).length;
    };
    expect(await count(['--from', created, '--to', created])).toBe(3);
    expect(await count(['--to', created])).toBe(3);
    const next = new Date(Date.parse(created) + 86_400_000).toISOString().slice(0, 10);
    expect(await count(['--from', next])).toBe(0);
    expect(await count(['--from', made.euro.created_at as string])).toBe(2);
    expect(await count(['--to', made.euro.created_at as string])).toBe(1);
    expect(await count(['--status', 'paid'])).toBe(1);
    expect((await merchant.user.run(['requests', 'export', '--from', '2026-13-01'])).code).toBe(3);
    expect((await merchant.user.run(['requests', 'export', '--from', next, '--to', created])).code).toBe(3);
    expect((await merchant.user.run(['requests', 'export', '--status', 'lost'])).code).toBe(2);
  });
});

describe("the shop guide's export (docs/shop.md)", () => {
  it('shows the columns the export has, in its order', () => {
    const [sample, ...more] = docBlocks('docs/shop.md', 'requests-export');
    expect(more).toEqual([]);
    expect(sample?.code.split('\n')[0]).toBe(COLUMNS.join(','));
  });
});

describe('requests export of a profile with no store yet', () => {
  it('prints the header alone, and makes no store', async () => {
    const { user } = await backendUser(sb, 'service');
    const result = await user.run(['requests', 'export', '--no-bom']);
    expect(result).toMatchObject({ code: 0, stdout: `${COLUMNS.join(',')}\r\n` });
    expect(await user.json(['requests', 'export'])).toMatchObject({ _code: 0 });
    expect((await user.run(['requests', 'export', '--format', 'json'])).stdout).toBe('[]\n');
    expect(existsSync(join(user.configDir, 'store', 'default.sqlite'))).toBe(false);
  });
});
