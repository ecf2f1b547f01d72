/**
 * Counters and histograms the hit path moves with plain arithmetic, folded into the registry only
 * when it is read (issue 10). prom-client resolves, validates and hashes a label object on every
 * `inc` and `observe`, even on a child bound with `labels()`: per request that cost about as much
 * as the rest of a memory hit. Here a label set is resolved once into a cell (nested Maps, no
 * string building, label-children.ts), a request adds to the cell, and a scrape reads the cells.
 */
import type { Counter, Registry } from 'prom-client';
import { cellTree } from './label-children.js';

export interface CountCell {
  value: number;
}

/**
 * Counts in cells; before each read of `counter`, the counts since the last read are added to it
 * (prom-client runs a metric's `collect` before reading it). The counter keeps its name, help,
 * labels and output; only when increments happen changes.
 */
export function foldedCounter<L extends string>(counter: Counter<L>, labelNames: readonly L[]): (...values: string[]) => CountCell {
  const cells: Array<{ labels: Record<string, string>; cell: CountCell; folded: number }> = [];
  const find = cellTree(labelNames.length, (values) => {
    const cell: CountCell = { value: 0 };
    cells.push({ labels: Object.fromEntries(labelNames.map((name, i) => [name, values[i] as string])), cell, folded: 0 });
    return cell;
  });
  const fold = (): void => {
    for (const entry of cells) {
      const delta = entry.cell.value - entry.folded;
      if (delta === 0) continue;
      counter.inc(entry.labels as Partial<Record<L, string>>, delta);
      entry.folded = entry.cell.value;
    }
  };
  // The same hook a Counter takes as its `collect` option; set here because the cells come after it.
  if ((counter as { collect?: unknown }).collect !== undefined) throw new Error('a folded counter must not have a collect hook of its own');
  Object.assign(counter, { collect: fold });
  return (...values) => find(values);
}

export interface HistogramCell {
  observe(value: number): void;
}

interface HistogramSeries {
  labels: Record<string, string>;
  /** counts[i]: observations in (upper[i-1], upper[i]]; the last slot is above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

interface SampleValue {
  value: number;
  labels: Record<string, string | number>;
  metricName: string;
}

/**
 * A Prometheus histogram registered into a prom-client registry as a metric of its own: the
 * same exposition (`_bucket` with `le`, `_sum`, `_count`) and the same `get()` shape as
 * prom-client's Histogram, but an observation is a bucket search and three additions.
 */
export class FoldedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series: HistogramSeries[] = [];
  private readonly find: (values: string[]) => HistogramCell;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly upperBounds: readonly number[],
    registry: Registry,
  ) {
    this.find = this.newTree();
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The cell of one label set, in `labelNames` order (one per label set, kept). */
  cell(...values: string[]): HistogramCell {
    return this.find(values);
  }

  /** What prom-client's registry formats (labels of a series apart from `le`). */
  async getForPromString(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: Array<SampleValue & { sharedLabels: Record<string, string> }>;
  }> {
    const values: Array<SampleValue & { sharedLabels: Record<string, string> }> = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series) {
      let cumulative = 0;
      this.upperBounds.forEach((le, i) => {
        cumulative += s.counts[i] as number;
        values.push({ labels: { le }, sharedLabels: s.labels, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** As prom-client's `get()`: each sample's labels include its series' labels. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: SampleValue[] }> {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ sharedLabels, labels, value, metricName }) => ({ labels: { ...sharedLabels, ...labels }, value, metricName })),
    };
  }

  /** Zeroes every series in place: cells handed out keep counting into them. */
  reset(): void {
    for (const s of this.series) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }

  private newTree(): (values: string[]) => HistogramCell {
    const bounds = this.upperBounds;
    return cellTree(this.labelNames.length, (values) => {
      const series: HistogramSeries = {
        labels: Object.fromEntries(this.labelNames.map((name, i) => [name, values[i] as string])),
        counts: new Float64Array(bounds.length + 1),
        sum: 0,
        count: 0,
      };
      this.series.push(series);
      return {
        observe(value: number): void {
          let i = 0;
          while (i < bounds.length && value > (bounds[i] as number)) i++;
          (series.counts[i] as number) += 1;
          series.sum += value;
          series.count += 1;
        },
      };
    });
  }
}
