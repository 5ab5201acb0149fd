import { describe, expect, it } from 'vitest';
import { METRICS_CONTENT_TYPE, Metrics } from '../../../src/http/metrics.js';
import { parsePrometheus, sampleValue } from '../../helpers/network/prometheus.js';

describe('metrics in the Prometheus text format 0.0.4', () => {
  it('renders counters, gauges and histograms that a strict reader reads back', async () => {
    const metrics = new Metrics();
    const requests = metrics.counter('t_requests_total', 'Requests\nby status, with a \\ in the help', []);
    requests.inc({ route: '/a', status: '200' });
    requests.inc({ route: '/a', status: '200' }, 2);
    requests.inc({ route: 'odd "route"\\with\nbreaks', status: '404' });
    const payments = metrics.counter('t_payments_total', 'Payments', [{ status: 'paid' }, { status: 'expired' }]);
    payments.inc({ status: 'paid' });
    metrics.counter('t_plain_total', 'Nothing yet');
    metrics.gauge('t_backlog', 'Waiting', async () => 7);
    metrics.gauge('t_by_topic', 'Waiting per topic', () => [{ labels: { topic: 'webhook' }, value: 1.5 }]);
    metrics.gauge('t_broken', 'A read that fails', () => Promise.reject(new Error('store down')));
    const seconds = metrics.histogram('t_store_seconds', 'Store calls', [0.01, 0.1, 1]);
    seconds.observe(0.005, { op: 'shop.get' });
    seconds.observe(0.05, { op: 'shop.get' });
    seconds.observe(5, { op: 'shop.get' });
    seconds.observe(0.2, { op: 'outbox.claim' });

    const text = await metrics.render();
    expect(METRICS_CONTENT_TYPE).toBe('text/plain; version=0.0.4; charset=utf-8');
    const families = parsePrometheus(text);
    expect(families.get('t_requests_total')).toMatchObject({ type: 'counter', help: 'Requests\nby status, with a \\ in the help' });
    expect(sampleValue(families, 't_requests_total', { route: '/a', status: '200' })).toBe(3);
    expect(sampleValue(families, 't_requests_total', { route: 'odd "route"\\with\nbreaks' })).toBe(1);
    expect(sampleValue(families, 't_payments_total', { status: 'paid' })).toBe(1);
    expect(sampleValue(families, 't_payments_total', { status: 'expired' })).toBe(0);
    expect(sampleValue(families, 't_plain_total')).toBe(0);
    expect(sampleValue(families, 't_backlog')).toBe(7);
    expect(sampleValue(families, 't_by_topic', { topic: 'webhook' })).toBe(1.5);
    expect(families.has('t_broken')).toBe(false);
    expect(families.get('t_store_seconds')?.type).toBe('histogram');
    expect(sampleValue(families, 't_store_seconds_bucket', { op: 'shop.get', le: '0.01' })).toBe(1);
    expect(sampleValue(families, 't_store_seconds_bucket', { op: 'shop.get', le: '0.1' })).toBe(2);
    expect(sampleValue(families, 't_store_seconds_bucket', { op: 'shop.get', le: '+Inf' })).toBe(3);
    expect(sampleValue(families, 't_store_seconds_count', { op: 'shop.get' })).toBe(3);
    expect(sampleValue(families, 't_store_seconds_sum', { op: 'shop.get' })).toBeCloseTo(5.055);
    expect(sampleValue(families, 't_store_seconds_count', { op: 'outbox.claim' })).toBe(1);
  });

  it('refuses what the format cannot carry: a bad name, a counter not ending in _total, a name twice, a bad label', () => {
    const metrics = new Metrics();
    expect(() => metrics.gauge('has-dash', 'x', () => 1)).toThrow(/not a metric name/);
    expect(() => metrics.counter('t_requests', 'x')).toThrow(/_total/);
    metrics.gauge('t_once', 'x', () => 1);
    expect(() => metrics.gauge('t_once', 'x', () => 1)).toThrow(/twice/);
    const counter = metrics.counter('t_labelled_total', 'x', []);
    expect(() => counter.inc({ 'bad-label': 'x' })).toThrow(/label name/);
    expect(() => counter.inc({ __reserved: 'x' })).toThrow(/label name/);
  });

  it('the reader is strict: it refuses a family split in two, an unknown escape, a histogram that does not add up', () => {
    expect(() => parsePrometheus('# TYPE a counter\na_total 1\n')).not.toThrow();
    expect(() => parsePrometheus('# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n')).toThrow(/split/);
    expect(() => parsePrometheus('a{x="\\q"} 1\n')).toThrow(/escape/);
    expect(() => parsePrometheus('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n')).toThrow(/cumulative/);
    expect(() => parsePrometheus('a 1')).toThrow(/newline/);
  });
});
