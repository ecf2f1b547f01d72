/**
 * Server processes under test: started as children pinned to one CPU (taskset, when present)
 * so the load generator on the other CPU does not compete with them; their CPU time and RSS
 * read from /proc.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../../src/paths.js';
import { exited, freePort, isAnswering, isPortOpen, waitFor } from '../../testkit/index.js';

export const ROOT = projectRoot();
export const HAS_TASKSET = spawnSync('taskset', ['-V']).status === 0;

/** A built module of bench/baselines/ as `node --import` takes it (in-process.js, background-work.js, exit-on-signal.js). */
export const baselineModule = (name: string, root = ROOT): string => pathToFileURL(join(root, 'dist', 'bench', 'baselines', name)).href;
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * The pids of `pid`'s children (a worker-mode primary's workers), from every /proc/<pid>/stat's
 * parent pid (this kernel has no /proc/<pid>/task/<tid>/children).
 */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const parent = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
      if (parent === pid) children.push(Number(name));
    } catch {
      // the process exited while we looked
    }
  }
  return children;
}

export function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : Number.NaN;
}

/** Moves this process (load generator, fake upstream) to `cpu`. */
export function pinSelf(cpu: number): void {
  if (HAS_TASKSET) spawnSync('taskset', ['-p', '-c', String(cpu), String(process.pid)]);
}

export interface Server {
  child: ChildProcess;
  pid: number;
  url: string;
}

/**
 * Starts `node <script>` (a file under `root`/dist/, by default this checkout's) on `cpu`, a CPU
 * number or a taskset CPU list ('0-1': free to use both; without taskset a child would inherit
 * this process's CPU 1); taskset execs node, so the pid is node's.
 */
export async function startNodeServer(
  script: string,
  env: Record<string, string>,
  healthPath: string,
  cpu: number | string = 0,
  root = ROOT,
  nodeFlags: readonly string[] = [],
): Promise<Server> {
  const port = await freePort();
  const args = [process.execPath, ...nodeFlags, join(root, 'dist', script)];
  const [command, rest] = HAS_TASKSET ? ['taskset', ['-c', String(cpu), ...args]] : [args[0] as string, args.slice(1)];
  const child = spawn(command, rest, {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  // Generous: several servers start at once pinned to one CPU, and a proxy alone takes 2-5 s to start on a slow machine.
  await waitFor(() => isAnswering(url + healthPath), { timeoutMs: 60_000, what: `${script} on ${url}` });
  return { child, pid: child.pid as number, url };
}

export interface ProxyOptions {
  upstreamUrl: string;
  redisUrl?: string;
  logLevel?: string;
  config?: Record<string, unknown>;
  /** A CPU number, or a taskset CPU list ('0-1') for a proxy free to use several (worker mode). */
  cpu?: number | string;
  /** Another build of the proxy (a checkout with dist/ built), e.g. the baseline commit's. */
  root?: string;
  /**
   * Baseline 3 (bench/baselines/in-process.ts) in the proxy's process: the bare handler on this
   * port, answering the head the bench writes to `headersFile`, from memory (`body`) or from a
   * Redis key (`redisUrl`, `key`).
   */
  inProcessBare?: { port: number; headersFile: string; body?: Buffer; redisUrl?: string; key?: string };
  /** node's own flags (--cpu-prof for bench:profile), before the script. */
  nodeFlags?: readonly string[];
}

/** A proxy process as operators run it (dist/src/main.js), with its own admin port. */
export async function startProxy(options: ProxyOptions): Promise<Server & { adminUrl: string }> {
  const adminPort = await freePort();
  const env: Record<string, string> = {
    UPSTREAM_URLS: options.upstreamUrl,
    REDIS_URL: options.redisUrl ?? '',
    LOG_LEVEL: options.logLevel ?? 'info', // the default: one log line per request is part of the cost
    ADMIN_PORT: String(adminPort),
    ADMIN_HOST: '127.0.0.1',
  };
  if (options.config) {
    const file = join(mkdtempSync(join(tmpdir(), 'scp-bench-')), 'config.json');
    writeFileSync(file, JSON.stringify(options.config));
    env.CONFIG_FILE = file;
  }
  const bare = options.inProcessBare;
  const flags: string[] = [...(options.nodeFlags ?? [])];
  if (bare) {
    flags.push('--import', baselineModule('in-process.js', options.root));
    Object.assign(env, { BARE_PORT: String(bare.port), BARE_HEADERS_FILE: bare.headersFile, BARE_BODY: bare.body?.toString('base64') ?? '' });
    if (bare.redisUrl) Object.assign(env, { BARE_REDIS_URL: bare.redisUrl, BARE_KEY: bare.key ?? 'bench:body' });
  }
  const server = await startNodeServer('src/main.js', env, '/health', options.cpu ?? 0, options.root, flags);
  if (bare) await waitFor(() => isPortOpen(bare.port), { timeoutMs: 10_000, what: `baseline 3 on port ${bare.port}` });
  return { ...server, adminUrl: `http://127.0.0.1:${adminPort}` };
}

/**
 * Runs `node [flags] <script>` (a file under dist/) to completion, on `cpu` when taskset is
 * there, and returns the JSON line it prints: the bench's in-process measurements.
 */
export async function runJsonChild<T>(script: string, options: { flags?: string[]; env?: Record<string, string>; cpu?: number } = {}): Promise<T> {
  const args = [process.execPath, ...(options.flags ?? []), join(ROOT, 'dist', script)];
  const [command, rest] = HAS_TASKSET && options.cpu !== undefined ? ['taskset', ['-c', String(options.cpu), ...args]] : [args[0] as string, args.slice(1)];
  const child = spawn(command, rest, { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await exited(child);
  return JSON.parse(out) as T;
}
