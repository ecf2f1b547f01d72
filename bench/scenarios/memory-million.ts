/**
 * Scenario 5: distinct cached URLs through the memory tier. Two measurements:
 * - one million entries put into a MemoryStore in a child process (bench/memory-fill.ts), with a
 *   256 MiB bound, once with Node's default heap sizing and once with the heap main.ts gives a
 *   proxy with that tier (src/runtime/heap-sizing.ts): RSS and the tier's own byte count against
 *   cache.memory.maxBytes;
 * - through HTTP, up to 1,000,000 distinct URLs or the time budget, whichever comes first: the
 *   memory flood (bench/memory-flood.ts) run as a child, its summary read back: RSS growth of a
 *   proxy started as `npm start` starts it, against issue 14's limit (the tier + 48 MiB).
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { exited } from '../../testkit/index.js';
import { heapFlagsToAdd, heapSizingFor } from '../../src/runtime/heap-sizing.js';
import { ROOT, runJsonChild } from '../lib/proc.js';
import type { Section } from '../lib/report.js';
import type { Context } from './context.js';

const TARGET = 1_000_000;

interface FloodSummary {
  seconds: number;
  requests: number;
  serverErrors: number;
  maxBytesMiB: number;
  idleRssMiB: number;
  peakRssMiB: number;
  growthMiB: number;
  growthLimitMiB: number;
  withinLimit: boolean;
  requestsPerSecond: number;
  proxyCommandLine: string;
  growthPerMaxBytes: number;
  peakTierMiB: number;
  samples: Array<{ tierEntries: number }>;
}

interface FillSummary {
  entries: number;
  maxBytesMiB: number;
  heldEntries: number;
  tierMiB: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  heapUsedMiB: number;
  rssGrowthPerBound: number;
  seconds: number;
}

const FILL_BOUND_MIB = 256;
/** The heap a proxy with this tier runs with (main.ts): old space 64 MiB + twice the tier, a small young generation. */
const SIZED_FLAGS = heapFlagsToAdd(heapSizingFor(FILL_BOUND_MIB * 2 ** 20, null), []);

function fill(entries: number, flags: string[]): Promise<FillSummary> {
  return runJsonChild<FillSummary>('bench/memory-fill.js', {
    flags: ['--expose-gc', ...flags],
    env: { ENTRIES: String(entries), MAX_BYTES: String(FILL_BOUND_MIB * 2 ** 20) },
  });
}

const fillNote = (f: FillSummary): string =>
  `${f.entries.toLocaleString('en-US')} entries put, ${f.heldEntries.toLocaleString('en-US')} held; tier counted ${f.tierMiB} MiB, heap used ${f.heapUsedMiB} MiB; RSS ${f.rssBeforeMiB} -> ${f.rssAfterMiB} MiB (growth ${f.rssGrowthPerBound}x bound); ${f.seconds} s`;

/** The memory flood through HTTP, run as a child (it starts its own proxy); its summary read back. */
async function floodThroughHttp(seconds: number, connections: number): Promise<FloodSummary> {
  process.stderr.write(`bench: memory flood: up to ${TARGET.toLocaleString('en-US')} distinct URLs or ${seconds} s\n`);
  const summaryFile = join(ROOT, 'bench/results/memory-flood.json');
  rmSync(summaryFile, { force: true }); // a failed flood must not report an earlier run's figures
  const child = spawn(process.execPath, [join(ROOT, 'dist/bench/memory-flood.js')], {
    env: { ...process.env, FLOOD_SECONDS: String(seconds), FLOOD_TARGET: String(TARGET), BENCH_CONNECTIONS: String(connections) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await exited(child);
  return JSON.parse(readFileSync(summaryFile, 'utf8')) as FloodSummary;
}

function floodReport(flood: FloodSummary, seconds: number): Pick<Section, 'rows' | 'findings'> & { entries: number } {
  const entries = Math.max(0, ...flood.samples.map((s) => s.tierEntries));
  const reached = flood.requests >= TARGET ? 'all 1,000,000' : `${flood.requests.toLocaleString('en-US')} of 1,000,000 (time budget ${seconds} s)`;
  return {
    entries,
    rows: [
      {
        scenario: '5 memory',
        name: `distinct small answers, memory tier bound ${flood.maxBytesMiB} MiB`,
        note: `${reached}; RSS ${flood.idleRssMiB} -> ${flood.peakRssMiB} MiB: +${flood.growthMiB} MiB, limit +${flood.growthLimitMiB} MiB (${flood.withinLimit ? 'within' : 'OVER'}); tier counted ${flood.peakTierMiB} MiB, ${entries.toLocaleString('en-US')} entries; ${flood.requestsPerSecond} req/s; proxy ${flood.proxyCommandLine}`,
      },
    ],
    findings: [
      `Memory: ${reached} distinct URLs sent (${flood.serverErrors} 5xx); the tier's own count peaked at ${flood.peakTierMiB} MiB of a ${flood.maxBytesMiB} MiB bound, ` +
        `RSS grew ${flood.idleRssMiB} -> ${flood.peakRssMiB} MiB (+${flood.growthMiB} MiB, issue 14's limit +${flood.growthLimitMiB} MiB: ${flood.withinLimit ? 'within' : 'OVER'}) with the heap main.ts sizes from the tier. Every URL is a miss through the fake upstream, so the fill rate, not the tier, limits how many fit in the budget.`,
    ],
  };
}

export async function memoryMillion({ options }: Context): Promise<Section> {
  const fillEntries = options.quick ? 100_000 : TARGET;
  process.stderr.write(`bench: memory fill: ${fillEntries.toLocaleString('en-US')} entries in a ${FILL_BOUND_MIB} MiB tier, default and sized heap\n`);
  const defaultHeap = await fill(fillEntries, []);
  const sizedHeap = await fill(fillEntries, SIZED_FLAGS);
  // The HTTP flood needs seconds of filling to say anything: --quick leaves it to npm run bench:memory.
  const seconds = 20;
  const flood = options.quick ? undefined : await floodThroughHttp(seconds, options.connections);
  const floodPart = flood
    ? floodReport(flood, seconds)
    : {
        entries: 0,
        rows: [{ scenario: '5 memory', name: 'distinct small answers through HTTP', note: 'skipped with --quick (npm run bench:memory runs it alone)' }],
        findings: [],
      };
  return {
    id: 'memoryMillion',
    rows: [
      { scenario: '5 memory', name: `in-process fill, ${FILL_BOUND_MIB} MiB bound, Node's default heap sizing`, note: fillNote(defaultHeap) },
      { scenario: '5 memory', name: `in-process fill, ${FILL_BOUND_MIB} MiB bound, ${SIZED_FLAGS.join(' ')}`, note: fillNote(sizedHeap) },
      ...floodPart.rows,
    ],
    findings: [
      `Memory, ${fillEntries.toLocaleString('en-US')} distinct entries into a ${FILL_BOUND_MIB} MiB tier: the tier counted ${defaultHeap.tierMiB} MiB of its ${FILL_BOUND_MIB} MiB bound (live heap ${defaultHeap.heapUsedMiB} MiB), RSS grows ${defaultHeap.rssGrowthPerBound}x the bound with Node's default heap sizing (V8 lets garbage of evicted entries pile up before collecting it, and the allocators keep the pages) and ${sizedHeap.rssGrowthPerBound}x with ${SIZED_FLAGS.join(' ')}.`,
      ...floodPart.findings,
    ],
    data: { fill: { defaultHeap, sizedHeap, flags: SIZED_FLAGS }, flood: flood && { ...flood, samples: undefined }, entries: floodPart.entries },
  };
}
