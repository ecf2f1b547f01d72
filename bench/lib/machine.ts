/** The facts about the machine a run's figures only make sense next to. */
import { cpus, loadavg } from 'node:os';

export interface Machine {
  cores: number;
  cpuModel: string;
  node: string;
  /** 1, 5 and 15 minute load averages. */
  loadBefore: number[];
  loadAfter?: number[];
}

const rounded = (values: number[]): number[] => values.map((v) => Math.round(v * 100) / 100);

export function machineNow(): Machine {
  const all = cpus();
  return { cores: all.length, cpuModel: all[0]?.model.trim() ?? 'unknown', node: process.version, loadBefore: rounded(loadavg()) };
}

export function finishMachine(machine: Machine): Machine {
  return { ...machine, loadAfter: rounded(loadavg()) };
}

export function describeMachine(m: Machine): string {
  return `${m.cores} cores (${m.cpuModel}), node ${m.node}, load average ${m.loadBefore.join(' ')} before, ${m.loadAfter?.join(' ') ?? '?'} after`;
}
