/**
 * What the metrics cost a memory hit: the telemetry calls one hit makes (one memory lookup
 * counted, one served request: a counter and a latency histogram), timed in a loop, with the
 * access log off so only the metrics count. Printed as one JSON line (ns per hit); the
 * memory-hit scenario turns it into a share of a hit's CPU. Also times the same samples through
 * prom-client label objects, the way they were taken before issue 10, for comparison.
 *   node dist/bench/micro/telemetry-cost.js
 */
import { pino } from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { createTelemetry } from '../../src/telemetry/prometheus-telemetry.js';

const ITERATIONS = Number(process.env.ITERATIONS ?? 500_000);
const ROUNDS = 5;

const telemetry = createTelemetry({ logger: pino({ level: 'silent' }), redis: false, defaultMetrics: false, accessLog: { enabled: false, hitsEvery: 1 } });
const served = { requestId: 'r', method: 'GET', route: 'tx_by_id', status: 200, cache: 'HIT', cls: 'final', seconds: 0.0001 };

const registry = new Registry();
const counter = new Counter({ name: 'c_total', help: 'h', labelNames: ['route', 'method', 'status', 'cache'], registers: [registry] });
const lookups = new Counter({ name: 'l_total', help: 'h', labelNames: ['tier', 'class', 'result'], registers: [registry] });
const histogram = new Histogram({
  name: 'h_seconds',
  help: 'h',
  labelNames: ['route', 'cache'],
  registers: [registry],
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

function time(run: () => void): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) run();
  return Number(process.hrtime.bigint() - started) / ITERATIONS;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const folded: number[] = [];
const labelObjects: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  folded.push(
    time(() => {
      telemetry.cacheLookup('memory', 'final', 'hit');
      telemetry.requestServed(served);
    }),
  );
  labelObjects.push(
    time(() => {
      lookups.labels({ tier: 'memory', class: 'final', result: 'hit' }).inc();
      counter.labels({ route: 'tx_by_id', method: 'GET', status: '200', cache: 'HIT' }).inc();
      histogram.labels({ route: 'tx_by_id', cache: 'HIT' }).observe(0.0001);
    }),
  );
}
console.log(
  JSON.stringify({
    nsPerHitFolded: Math.round(median(folded)),
    nsPerHitPromClientLabels: Math.round(median(labelObjects)),
    iterations: ITERATIONS,
    rounds: ROUNDS,
  }),
);
