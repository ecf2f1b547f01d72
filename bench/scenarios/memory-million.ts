/**
 * Scenario 5: distinct cached URLs through the memory tier, up to 1,000,000 or the time budget,
 * whichever comes first: the existing memory flood (bench/memory-flood.ts) run as a child, its
 * summary read back. RSS and the tier's own byte count against cache.memory.maxBytes.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { exited } from '../../testkit/index.js';
import { ROOT } from '../lib/proc.js';
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
  growthPerMaxBytes: number;
  peakTierMiB: number;
  samples: Array<{ tierEntries: number }>;
}

export async function memoryMillion({ options }: Context): Promise<Section> {
  const seconds = options.quick ? 4 : 45;
  process.stderr.write(`bench: memory flood: up to ${TARGET.toLocaleString('en-US')} distinct URLs or ${seconds} s\n`);
  const summaryFile = join(ROOT, 'bench/results/memory-flood.json');
  rmSync(summaryFile, { force: true }); // a failed flood must not report an earlier run's figures
  const child = spawn(process.execPath, [join(ROOT, 'dist/bench/memory-flood.js')], {
    env: { ...process.env, FLOOD_SECONDS: String(seconds), FLOOD_TARGET: String(TARGET), BENCH_CONNECTIONS: String(options.connections) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await exited(child);
  const flood = JSON.parse(readFileSync(summaryFile, 'utf8')) as FloodSummary;
  const entries = Math.max(0, ...flood.samples.map((s) => s.tierEntries));
  const reached = flood.requests >= TARGET ? 'all 1,000,000' : `${flood.requests.toLocaleString('en-US')} of 1,000,000 (time budget ${seconds} s)`;
  return {
    id: 'memoryMillion',
    rows: [
      {
        scenario: '5 memory',
        name: `distinct small answers, memory tier bound ${flood.maxBytesMiB} MiB`,
        note: `${reached}; RSS ${flood.idleRssMiB} -> ${flood.peakRssMiB} MiB (growth ${flood.growthPerMaxBytes}x bound); tier counted ${flood.peakTierMiB} MiB, ${entries.toLocaleString('en-US')} entries`,
      },
    ],
    findings: [
      `Memory: ${reached} distinct URLs sent (${flood.serverErrors} 5xx); the tier's own count peaked at ${flood.peakTierMiB} MiB of a ${flood.maxBytesMiB} MiB bound, ` +
        `RSS grew ${flood.idleRssMiB} -> ${flood.peakRssMiB} MiB, ${flood.growthPerMaxBytes}x the bound. Every URL is a miss through the fake upstream, so the fill rate, not the tier, limits how many fit in the budget.`,
    ],
    data: { flood: { ...flood, samples: undefined }, entries },
  };
}
