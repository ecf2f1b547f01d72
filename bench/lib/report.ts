/** One markdown table for the whole run: every row next to the baseline of its own scenario. */
import { warmUpSeconds, type Run } from './load.js';
import { describeMachine, type Machine } from './machine.js';

export interface Row {
  scenario: string;
  name: string;
  run?: Run;
  /** The row this one is compared with (same scenario, same run). */
  baseline?: Run;
  note?: string;
}

export interface Section {
  id: string;
  rows: Row[];
  /** Sentences under the table: targets, derived figures, caveats. */
  findings: string[];
  data?: Record<string, unknown>;
}

export const ratio = (value: number | undefined, base: number | undefined): number | undefined =>
  value === undefined || !base ? undefined : Math.round((value / base) * 100) / 100;

const x = (value: number | undefined): string => (value === undefined ? '' : `${value.toFixed(2)}x`);
const n = (value: number | undefined): string => (value === undefined ? '' : value.toLocaleString('en-US'));

function cells(row: Row): string[] {
  const r = row.run;
  const b = row.baseline;
  return [
    row.scenario,
    row.name,
    n(r?.requestsPerSecond),
    b ? x(ratio(r?.requestsPerSecond, b.requestsPerSecond)) : '',
    n(r?.p50Ms),
    n(r?.p99Ms),
    n(r?.cpuMicrosPerRequest),
    b ? x(ratio(r?.cpuMicrosPerRequest, b.cpuMicrosPerRequest)) : '',
    n(r?.rssMiB),
    r ? String(r.errors) : '',
    r?.generator ? `${r.generator}${r.generatorCpuMicrosPerRequest === undefined ? '' : ` (${r.generatorCpuMicrosPerRequest} µs/req)`}` : '',
    row.note ?? '',
  ];
}

export interface Header {
  machine: Machine;
  quick: boolean;
  rounds: number;
  seconds: number;
  connections: number;
  pinned: boolean;
  elapsedSeconds: number;
}

export function markdown(header: Header, sections: Section[]): string {
  const rows = sections.flatMap((s) => s.rows).map((row) => `| ${cells(row).join(' | ')} |`);
  return [
    `Machine: ${describeMachine(header.machine)}.`,
    `Load: autocannon from the bench process, or wrk (one thread, its own process) where a row names it, ${header.connections} connections, ${header.seconds} s per run after ${warmUpSeconds(header)} s of warm-up, ${header.rounds} alternating round(s), medians; ` +
      `${header.pinned ? 'servers pinned to CPU 0, load generator and fake upstream on CPU 1' : 'unpinned (no taskset)'}; ${header.quick ? '--quick, ' : ''}${header.elapsedSeconds} s in all.`,
    '',
    '| scenario | variant | req/s | vs baseline | p50 ms | p99 ms | server CPU µs/req | vs baseline | RSS MiB | errors | load generator (its CPU) | notes |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    ...sections.flatMap((s) => s.findings.map((f) => `- ${f}`)),
  ].join('\n');
}
