/** A throwaway Prometheus that scrapes the proxies, and the queries the check asks it. */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, stopChild, waitFor } from '../../testkit/index.js';

export interface Prometheus {
  url: string;
  stop(): Promise<void>;
}

export const SCRAPE_JOB = 'stacks-proxy';

function prometheusConfig(targets: string[]): string {
  return [
    'global:',
    '  scrape_interval: 1s',
    '  evaluation_interval: 1s',
    'scrape_configs:',
    `  - job_name: ${SCRAPE_JOB}`,
    '    scrape_interval: 1s',
    '    scrape_timeout: 1s',
    '    static_configs:',
    `      - targets: [${targets.map((target) => `'${target}'`).join(', ')}]`,
    '',
  ].join('\n');
}

export async function startPrometheus(targets: string[], dir: string): Promise<Prometheus> {
  const port = await freePort();
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, prometheusConfig(targets));
  const log = openSync(join(dir, 'prometheus.log'), 'a');
  const child = spawn(
    'prometheus',
    [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', log, log] },
  );
  closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  const prometheus = { url, stop: () => stopChild(child) };
  const failedToStart = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`cannot start prometheus (is it installed?): ${error.message}`)));
    child.once('exit', (code) => reject(new Error(`prometheus exited with ${code}; see its log:\n${tail(join(dir, 'prometheus.log'))}`)));
  });
  failedToStart.catch(() => undefined); // only awaited while waiting for readiness
  try {
    await Promise.race([waitFor(() => isReady(url), { timeoutMs: 15_000, intervalMs: 200, what: 'prometheus to be ready' }), failedToStart]);
  } catch (error) {
    await prometheus.stop();
    throw error;
  }
  return prometheus;
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}

async function isReady(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}

export interface QueryAnswer {
  status: 'success' | 'error';
  error?: string;
  data?: { resultType: string; result: unknown };
}

type Sample = [number, string];

export async function instantQuery(prometheusUrl: string, promql: string): Promise<QueryAnswer> {
  const response = await fetch(`${prometheusUrl}/api/v1/query`, {
    method: 'POST',
    body: new URLSearchParams({ query: promql }),
    signal: AbortSignal.timeout(10_000),
  });
  return (await response.json()) as QueryAnswer;
}

/** Values of an instant query's answer: one per series, or the scalar. */
export function samplesOf(answer: QueryAnswer): string[] {
  const result = answer.data?.result;
  if (answer.data?.resultType === 'scalar') return [(result as Sample)[1]];
  if (answer.data?.resultType === 'vector') return (result as { value: Sample }[]).map((series) => series.value[1]);
  return [];
}

/** Scrapes of the least-scraped instance in the last minute (0 while any instance is down). */
export async function scrapeCount(prometheusUrl: string): Promise<number> {
  const up = `up{job="${SCRAPE_JOB}"}`;
  const answer = await instantQuery(prometheusUrl, `min(count_over_time(${up}[1m])) * (min(${up}) == bool 1)`);
  return Number(samplesOf(answer)[0] ?? 0);
}
