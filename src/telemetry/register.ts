/** Turns catalogue specs into prom-client metrics registered in one registry. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CounterSpec, GaugeSpec, HistogramSpec, MetricSpec } from './catalogue.js';
import { FoldedHistogram } from './folded.js';

type MetricOf<S> = S extends CounterSpec<infer L> ? Counter<L> : S extends GaugeSpec<infer L> ? Gauge<L> : S extends HistogramSpec ? FoldedHistogram : never;

export type Registered<Specs> = { [K in keyof Specs]: MetricOf<Specs[K]> };

/**
 * Registers every spec of a table. `readState` is the collect hook of the specs marked
 * `readOnScrape`: prom-client runs it before reading each such metric.
 */
export function registerAll<Specs extends Record<string, MetricSpec>>(specs: Specs, registry: Registry, readState: () => Promise<void>): Registered<Specs> {
  const registered: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(specs)) registered[key] = create(spec, registry, readState);
  return registered as Registered<Specs>;
}

function create(spec: MetricSpec, registry: Registry, readState: () => Promise<void>): Counter | Gauge | FoldedHistogram {
  const common = {
    name: spec.name,
    help: spec.help,
    labelNames: spec.labelNames,
    registers: [registry],
    ...(spec.readOnScrape ? { collect: readState } : {}),
  };
  switch (spec.type) {
    case 'counter':
      return new Counter(common);
    case 'gauge':
      return new Gauge(common);
    case 'histogram':
      // Histograms are observed per request: cells folded at scrape (folded.ts), not prom-client's.
      return new FoldedHistogram(spec.name, spec.help, spec.labelNames, spec.buckets, registry);
  }
}
