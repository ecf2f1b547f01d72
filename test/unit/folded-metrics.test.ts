/**
 * The folded counters and histograms (src/telemetry/folded.ts) expose exactly what prom-client's
 * own Counter and Histogram expose for the same events: compared as scrape text.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FoldedHistogram, foldedCounter } from '../../src/telemetry/folded.js';

const BUCKETS = [0.0001, 0.001, 0.01, 0.1, 1];
const OBSERVED: Array<[string, string, number]> = [
  ['block', 'HIT', 0.00005],
  ['block', 'HIT', 0.0001], // on a bound: counted in that bucket (le is inclusive)
  ['block', 'MISS', 0.02],
  ['tx_by_id', 'HIT', 0.0007],
  ['tx_by_id', 'MISS', 3], // above every bound: +Inf only
  ['block', 'HIT', 0.5],
];

describe('FoldedHistogram', () => {
  it('scrapes the same text as a prom-client Histogram fed the same observations', async () => {
    const reference = new Registry();
    const folded = new Registry();
    const histogram = new Histogram({ name: 'h_seconds', help: 'help', labelNames: ['route', 'cache'], buckets: BUCKETS, registers: [reference] });
    const mine = new FoldedHistogram('h_seconds', 'help', ['route', 'cache'], BUCKETS, folded);
    for (const [route, cache, value] of OBSERVED) {
      histogram.observe({ route, cache }, value);
      mine.cell(route, cache).observe(value);
    }
    expect(await folded.metrics()).toBe(await reference.metrics());
  });

  it('answers get() as prom-client does (labels with le, series names), and zeroes on reset while its cells keep counting', async () => {
    const registry = new Registry();
    const mine = new FoldedHistogram('h_seconds', 'help', ['route'], BUCKETS, registry);
    const cell = mine.cell('block');
    cell.observe(0.005);
    const { values } = await mine.get();
    expect(values).toContainEqual({ labels: { route: 'block', le: 0.01 }, value: 1, metricName: 'h_seconds_bucket' });
    expect(values).toContainEqual({ labels: { route: 'block' }, value: 1, metricName: 'h_seconds_count' });
    registry.resetMetrics();
    cell.observe(0.5);
    const after = await mine.get();
    expect(after.values).toContainEqual({ labels: { route: 'block' }, value: 1, metricName: 'h_seconds_count' });
    expect(after.values).toContainEqual({ labels: { route: 'block' }, value: 0.5, metricName: 'h_seconds_sum' });
  });
});

describe('foldedCounter', () => {
  it('scrapes the same as a counter incremented per event, scrape after scrape', async () => {
    const reference = new Registry();
    const folded = new Registry();
    const direct = new Counter({ name: 'c_total', help: 'help', labelNames: ['route', 'cache'], registers: [reference] });
    const counter = new Counter({ name: 'c_total', help: 'help', labelNames: ['route', 'cache'], registers: [folded] });
    const cells = foldedCounter(counter, ['route', 'cache']);
    for (const round of [3, 0, 5]) {
      for (let i = 0; i < round; i++) {
        direct.inc({ route: 'block', cache: 'HIT' });
        cells('block', 'HIT').value++;
      }
      direct.inc({ route: 'tx', cache: 'MISS' });
      cells('tx', 'MISS').value++;
      expect(await folded.metrics()).toBe(await reference.metrics());
    }
  });
});
