/**
 * Worker mode as an operator runs it, for integration tests: `node dist/src/main.js` with the
 * given environment and settings (every hit logged), its primary's and workers' JSON lines
 * collected, resolved on the primary's "listening" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/paths.js';

const main = join(projectRoot(), 'dist', 'src', 'main.js');

export interface RunningCluster {
  child: ChildProcess;
  url: string;
  adminUrl: string;
  /** Every JSON line the primary and its workers have written so far. */
  lines: () => Record<string, unknown>[];
}

export interface ClusterStart {
  upstreamUrl: string;
  /** Where the config file is written (the test's temporary directory). */
  configDir: string;
  env: Record<string, string>;
  config?: object;
  /** Every process started is pushed here, so that the test can kill what a failure left running. */
  started: ChildProcess[];
}

export function startCluster({ upstreamUrl, configDir, env, config = {}, started }: ClusterStart): Promise<RunningCluster> {
  const file = join(configDir, `config-${started.length}.json`);
  writeFileSync(file, JSON.stringify({ accessLog: { hitsEvery: 1 }, ...config }));
  const child = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_PORT: '0',
      UPSTREAM_URLS: upstreamUrl,
      LOG_LEVEL: 'info',
      CONFIG_FILE: file,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let out = '';
  let err = '';
  const lines = () =>
    out
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    const look = () => {
      const listening = lines().find((line) => line.msg === 'listening');
      if (listening) resolve({ child, url: listening.url as string, adminUrl: (listening.adminUrl as string).replace('0.0.0.0', '127.0.0.1'), lines });
    };
    child.stdout.on('data', look);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}${err}`)));
  });
}

/** A GET on a connection of its own, so that the cluster hands each request to a worker anew. */
export function getOnNewConnection(url: string): Promise<{ status: number; body: string; requestId: string }> {
  return new Promise((resolve, reject) => {
    request(url, { agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, requestId: String(res.headers['x-request-id']) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

export const exitOf = (child: ChildProcess): Promise<number | null> => new Promise((resolve) => child.once('exit', (code) => resolve(code)));
