/**
 * `npm run bench` (about 12 minutes) and `npm run bench -- --quick` (about 3 minutes): every scenario of
 * issues 10 and 14 next to its baseline in the same run, on the same machine. These machines are shared
 * and noisy (absolute figures vary up to 2x between runs, ratios much less), so variants of a
 * scenario alternate round by round and the figures are medians.
 *
 * Servers under test are child processes pinned to CPU 0 (taskset); this process (autocannon and
 * the fake upstream) runs on CPU 1. Results: bench/results/latest.{md,json} (git ignores them).
 *   --quick        1 round of 1 s per variant, a short Zipf mix, no HTTP memory flood
 *   --only=a,b     only these scenarios (memoryHit, processTax, hitScaling, redisHit, coldMiss, passthrough, zipfMix, memoryMillion, scaling, walletMix, tipLatency, blockWarmup, wsFanout, tipRevalidate, workers;
 *                  kebab-case works too: --only=wallet-mix)
 *   BENCH_SECONDS, BENCH_ROUNDS, BENCH_CONNECTIONS override the run's shape.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeUpstream } from '../testkit/index.js';
import type { BenchOptions } from './lib/load.js';
import { finishMachine, machineNow } from './lib/machine.js';
import { HAS_TASKSET, ROOT, pinSelf } from './lib/proc.js';
import { markdown, type Section } from './lib/report.js';
import { HIT_PATH, type Context } from './scenarios/context.js';
import { blockWarmup } from './scenarios/block-warmup.js';
import { coldMiss } from './scenarios/cold-miss.js';
import { wsFanout } from './scenarios/ws-fanout.js';
import { memoryHit } from './scenarios/memory-hit.js';
import { memoryMillion } from './scenarios/memory-million.js';
import { passthrough } from './scenarios/passthrough.js';
import { processTax } from './scenarios/process-tax.js';
import { hitScaling } from './scenarios/hit-scaling.js';
import { redisHit } from './scenarios/redis-hit.js';
import { scaling } from './scenarios/scaling.js';
import { tipLatency } from './scenarios/tip-latency.js';
import { tipRevalidate } from './scenarios/tip-revalidate.js';
import { walletMix } from './scenarios/wallet-mix.js';
import { workers } from './scenarios/workers.js';
import { zipfMix } from './scenarios/zipf-mix.js';

const SCENARIOS: Record<string, (context: Context) => Promise<Section>> = {
  memoryHit,
  processTax,
  hitScaling,
  redisHit,
  coldMiss,
  passthrough,
  zipfMix,
  memoryMillion,
  scaling,
  walletMix,
  tipLatency,
  blockWarmup,
  wsFanout,
  tipRevalidate,
  workers,
};
/** kebab-case names accepted too (`--only=wallet-mix`). */
const camel = (name: string): string => name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

function parseOptions(argv: string[]): { options: BenchOptions; only: string[] } {
  const quick = argv.includes('--quick');
  const only =
    argv
      .find((a) => a.startsWith('--only='))
      ?.slice('--only='.length)
      .split(',')
      .map(camel) ?? Object.keys(SCENARIOS);
  const unknown = only.filter((name) => !(name in SCENARIOS));
  if (unknown.length) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  const options: BenchOptions = {
    quick,
    rounds: Number(process.env.BENCH_ROUNDS ?? (quick ? 1 : 3)),
    seconds: Number(process.env.BENCH_SECONDS ?? (quick ? 1 : 3)),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 50),
  };
  return { options, only };
}

async function main(): Promise<void> {
  const started = Date.now();
  const { options, only } = parseOptions(process.argv.slice(2));
  pinSelf(1);
  const machine = machineNow();
  // Principal ETags move as the upstream's do (only with that principal's activity), so the Zipf
  // mix's revalidations get the answers a real node would give.
  const upstream = await startFakeUpstream({ principalEtags: 'exact' });
  const sections: Section[] = [];
  try {
    const hitBody = Buffer.from(await (await fetch(upstream.url + HIT_PATH)).arrayBuffer());
    const context: Context = { options, upstream, hitBody };
    for (const name of only) {
      upstream.resetCounts();
      sections.push(await (SCENARIOS[name] as (c: Context) => Promise<Section>)(context));
    }
  } finally {
    await upstream.close();
  }
  const header = { machine: finishMachine(machine), ...options, pinned: HAS_TASKSET, elapsedSeconds: Math.round((Date.now() - started) / 1000) };
  const table = markdown(header, sections);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const json = { at: new Date().toISOString(), ...header, sections: sections.map(({ id, findings, data }) => ({ id, findings, data })) };
  writeFileSync(join(dir, 'latest.json'), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(dir, 'latest.md'), `${table}\n`);
  process.stdout.write(`${table}\n\nWritten to bench/results/latest.{md,json}.\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
