/**
 * A process's metrics, in the Prometheus text exposition format 0.0.4: counters,
 * gauges read at each scrape, and histograms. Label values come from a small,
 * known set at every call site (a route template, a status): never from what a
 * client sends, so the number of series stays bounded.
 */

export type Labels = Readonly<Record<string, string>>;

/** The Content-Type of the exposition. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Sample {
  suffix?: string;
  labels: Labels;
  value: number;
}

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  samples(): Sample[] | Promise<Sample[]>;
}

const escapeHelp = (text: string): string => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeValue = (text: string): string => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function formatLabels(labels: Labels): string {
  const pairs = Object.entries(labels);
  return pairs.length === 0 ? '' : `{${pairs.map(([name, value]) => `${name}="${escapeValue(value)}"`).join(',')}}`;
}

function checkLabels(labels: Labels): void {
  for (const name of Object.keys(labels)) if (!LABEL.test(name) || name.startsWith('__')) throw new Error(`not a label name: ${name}`);
}

/** One series per set of label values, kept in the order first seen. */
class Series<T> {
  private readonly rows = new Map<string, { labels: Labels; value: T }>();

  constructor(private readonly make: () => T) {}

  of(labels: Labels): T {
    const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
    let row = this.rows.get(key);
    if (row === undefined) {
      checkLabels(labels);
      row = { labels, value: this.make() };
      this.rows.set(key, row);
    }
    return row.value;
  }

  all(): { labels: Labels; value: T }[] {
    return [...this.rows.values()];
  }
}

export interface Counter {
  inc(labels?: Labels, by?: number): void;
}

export interface Histogram {
  /** One observation, in the histogram's unit (seconds for a duration). */
  observe(value: number, labels?: Labels): void;
}

/** Upper bounds for durations in seconds: a millisecond to ten seconds. */
const DURATION_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  private readonly families = new Map<string, Family>();

  private add(family: Family): void {
    if (!NAME.test(family.name)) throw new Error(`not a metric name: ${family.name}`);
    if (this.families.has(family.name)) throw new Error(`metric ${family.name} is registered twice`);
    this.families.set(family.name, family);
  }

  /**
   * A count that only grows (its name ends in _total). The series of `known` label sets are shown from
   * the start, at 0 (by default the one without labels), so a rate is right from the first event.
   */
  counter(name: string, help: string, known: readonly Labels[] = [{}]): Counter {
    if (!name.endsWith('_total')) throw new Error(`a counter's name ends in _total: ${name}`);
    const series = new Series(() => ({ value: 0 }));
    for (const labels of known) series.of(labels);
    this.add({ name, help, type: 'counter', samples: () => series.all().map((row) => ({ labels: row.labels, value: row.value.value })) });
    return {
      inc: (labels = {}, by = 1) => {
        series.of(labels).value += by;
      },
    };
  }

  /**
   * A value read at each scrape: one number, or one per set of labels. A read
   * that fails leaves the gauge out of that scrape rather than failing it.
   */
  gauge(name: string, help: string, read: () => number | { labels: Labels; value: number }[] | Promise<number | { labels: Labels; value: number }[]>): void {
    this.add({
      name,
      help,
      type: 'gauge',
      samples: async () => {
        const value = await read();
        if (typeof value === 'number') return [{ labels: {}, value }];
        for (const row of value) checkLabels(row.labels);
        return value;
      },
    });
  }

  histogram(name: string, help: string, buckets: readonly number[] = DURATION_BUCKETS): Histogram {
    const bounds = [...buckets].sort((a, b) => a - b);
    const series = new Series(() => ({ counts: bounds.map(() => 0), sum: 0, count: 0 }));
    this.add({
      name,
      help,
      type: 'histogram',
      samples: () =>
        series.all().flatMap(({ labels, value }) => [
          ...bounds.map((le, i) => ({ suffix: '_bucket', labels: { ...labels, le: formatNumber(le) }, value: value.counts[i] as number })),
          { suffix: '_bucket', labels: { ...labels, le: '+Inf' }, value: value.count },
          { suffix: '_sum', labels, value: value.sum },
          { suffix: '_count', labels, value: value.count },
        ]),
    });
    return {
      observe: (value, labels = {}) => {
        const row = series.of(labels);
        // Cumulative, as the format wants: each bucket counts every observation up to its bound.
        bounds.forEach((le, i) => {
          if (value <= le) row.counts[i] = (row.counts[i] as number) + 1;
        });
        row.sum += value;
        row.count += 1;
      },
    };
  }

  /** The exposition: each family's HELP and TYPE, then its samples. */
  async render(): Promise<string> {
    const parts = await Promise.all(
      [...this.families.values()].map(async (family) => {
        const samples = await Promise.resolve()
          .then(() => family.samples())
          .catch(() => undefined);
        if (samples === undefined) return '';
        const lines = [`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`];
        for (const sample of samples) lines.push(`${family.name}${sample.suffix ?? ''}${formatLabels(sample.labels)} ${formatNumber(sample.value)}`);
        return `${lines.join('\n')}\n`;
      }),
    );
    return parts.join('');
  }
}
