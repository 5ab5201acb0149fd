/**
 * A strict reader of the Prometheus text exposition format 0.0.4, for tests: it
 * throws on anything a scraper could misread (a bad name, an unknown escape, a
 * sample before its TYPE, a family split in two, a histogram whose buckets do
 * not add up). What it returns is every family with its samples.
 */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help?: string;
  samples: PromSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function fail(line: number, why: string): never {
  throw new Error(`metrics line ${line}: ${why}`);
}

function parseValue(text: string, line: number): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) fail(line, `not a number: ${text}`);
  return Number(text);
}

/** Reads `{a="x",b="y"}` from `text` at `start`; returns the labels and where they end. */
function parseLabels(text: string, start: number, line: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  while (text[i] !== '}') {
    const eq = text.indexOf('=', i);
    if (eq === -1) fail(line, 'a label without a value');
    const name = text.slice(i, eq);
    if (!LABEL.test(name)) fail(line, `not a label name: ${name}`);
    if (name in labels) fail(line, `label ${name} twice`);
    if (text[eq + 1] !== '"') fail(line, `label ${name}: the value is not quoted`);
    let value = '';
    let j = eq + 2;
    for (;;) {
      const c = text[j];
      if (c === undefined) fail(line, `label ${name}: the value never ends`);
      if (c === '"') break;
      if (c === '\n') fail(line, 'a raw newline in a label value');
      if (c === '\\') {
        const next = text[j + 1];
        if (next === '\\') value += '\\';
        else if (next === '"') value += '"';
        else if (next === 'n') value += '\n';
        else fail(line, `unknown escape \\${next ?? ''}`);
        j += 2;
        continue;
      }
      value += c;
      j += 1;
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i += 1;
    else if (text[i] !== '}') fail(line, `after label ${name}: "${text[i] ?? ''}"`);
  }
  return { labels, end: i + 1 };
}

/** The family a sample belongs to: histograms' _bucket, _sum and _count belong to their base name. */
function familyOf(name: string, families: Map<string, PromFamily>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && ['histogram', 'summary'].includes(families.get(base)?.type ?? '')) return base;
  }
  return name;
}

export function parsePrometheus(text: string): Map<string, PromFamily> {
  if (text !== '' && !text.endsWith('\n')) throw new Error('metrics: the last line has no newline');
  const families = new Map<string, PromFamily>();
  const finished = new Set<string>();
  let current: string | undefined;
  const enter = (name: string, line: number): void => {
    if (current === name) return;
    if (finished.has(name)) fail(line, `family ${name} is split in two`);
    if (current !== undefined) finished.add(current);
    current = name;
  };
  text
    .split('\n')
    .slice(0, -1)
    .forEach((raw, index) => {
      const line = index + 1;
      if (raw.startsWith('#')) {
        const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
        if (meta === null) return;
        const [, kind, name, rest] = meta as unknown as [string, 'HELP' | 'TYPE', string, string];
        if (!NAME.test(name)) fail(line, `not a metric name: ${name}`);
        enter(name, line);
        const family = families.get(name) ?? { type: 'untyped' as const, samples: [] };
        if (kind === 'TYPE') {
          if (family.samples.length > 0) fail(line, `TYPE of ${name} after its samples`);
          if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) fail(line, `unknown type ${rest}`);
          family.type = rest as PromFamily['type'];
        } else {
          if (family.help !== undefined) fail(line, `HELP of ${name} twice`);
          if (/\\[^\\n]/.test(rest.replace(/\\\\/g, ''))) fail(line, 'unknown escape in HELP');
          family.help = rest.replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
        }
        families.set(name, family);
        return;
      }
      if (raw.trim() === '') fail(line, 'an empty line');
      const nameEnd = raw.search(/[{ ]/);
      if (nameEnd <= 0) fail(line, 'no value');
      const name = raw.slice(0, nameEnd);
      if (!NAME.test(name)) fail(line, `not a metric name: ${name}`);
      let labels: Record<string, string> = {};
      let rest = raw.slice(nameEnd);
      if (rest.startsWith('{')) {
        const parsed = parseLabels(raw, nameEnd, line);
        labels = parsed.labels;
        rest = raw.slice(parsed.end);
      }
      const fields = rest.trim().split(' ');
      if (!rest.startsWith(' ') || fields.length < 1 || fields.length > 2) fail(line, 'expected " VALUE [TIMESTAMP]"');
      const value = parseValue(fields[0] as string, line);
      const base = familyOf(name, families);
      enter(base, line);
      const family = families.get(base) ?? { type: 'untyped' as const, samples: [] };
      families.set(base, family);
      if (family.type === 'histogram' && name === base) fail(line, `histogram ${base}: a sample without _bucket, _sum or _count`);
      if (family.type === 'counter' && value < 0) fail(line, `counter ${name} is negative`);
      family.samples.push({ name, labels, value });
    });
  for (const [name, family] of families) if (family.type === 'histogram') checkHistogram(name, family);
  return families;
}

/** Each series' buckets grow with `le`, end with +Inf, and +Inf is its _count. */
function checkHistogram(name: string, family: PromFamily): void {
  const key = (labels: Record<string, string>): string =>
    JSON.stringify(
      Object.entries(labels)
        .filter(([label]) => label !== 'le')
        .sort(),
    );
  const series = new Map<string, { buckets: [number, number][]; count?: number; sum?: number }>();
  for (const sample of family.samples) {
    const row = series.get(key(sample.labels)) ?? { buckets: [] };
    series.set(key(sample.labels), row);
    if (sample.name.endsWith('_bucket')) {
      const le = sample.labels.le;
      if (le === undefined) throw new Error(`histogram ${name}: a bucket without le`);
      row.buckets.push([le === '+Inf' ? Infinity : Number(le), sample.value]);
    } else if (sample.name.endsWith('_count')) row.count = sample.value;
    else row.sum = sample.value;
  }
  for (const [labels, row] of series) {
    const last = row.buckets.at(-1);
    if (last?.[0] !== Infinity) throw new Error(`histogram ${name}${labels}: no +Inf bucket last`);
    row.buckets.forEach(([le, count], i) => {
      const before = row.buckets[i - 1];
      if (before !== undefined && (before[0] >= le || before[1] > count)) throw new Error(`histogram ${name}${labels}: buckets not cumulative`);
    });
    if (row.count !== last[1] || row.sum === undefined) throw new Error(`histogram ${name}${labels}: _count is not the +Inf bucket, or no _sum`);
  }
}

/** The value of the one sample of `name` with these labels (among maybe more); undefined when there is none. */
export function sampleValue(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const family of families.values()) {
    const found = family.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    if (found !== undefined) return found.value;
  }
  return undefined;
}
