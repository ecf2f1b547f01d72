/**
 * Starts a throwaway `redis-server` on a random free port for a test suite, so Redis-backed
 * tests never depend on (or disturb) a Redis the machine may already run.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { exited, isPortOpen, waitFor } from './processes.js';

export interface TestRedis {
  url: string;
  port: number;
  /** Kills the server (SIGKILL): a crash as far as clients can tell. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open and nothing answers, a hung Redis. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT): it answers what it was sent meanwhile. */
  resume(): void;
  stop(): Promise<void>;
}

const START_LIMIT_MS = 10_000;

function launch(port: number): ChildProcess {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'], {
    stdio: 'ignore',
  });
  child.on('error', (error) => {
    throw new Error(`cannot start redis-server (is it installed?): ${error.message}`);
  });
  return child;
}

const listening = (port: number) => waitFor(() => isPortOpen(port), { timeoutMs: START_LIMIT_MS, what: `redis-server to open port ${port}` });

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child = launch(port);
  await listening(port);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    restart: async () => {
      child = launch(port);
      await listening(port);
    },
    pause: () => {
      child.kill('SIGSTOP');
    },
    resume: () => {
      child.kill('SIGCONT');
    },
    stop: async () => {
      child.kill('SIGCONT'); // a paused server would not act on SIGTERM
      child.kill('SIGTERM');
      await exited(child);
    },
  };
}

/** A Redis deployment of another mode (Cluster, Sentinel) for a test suite: its proxy URL and a stop. */
export interface TestRedisDeployment {
  /** `redis+cluster://…` or `redis+sentinel://…/mymaster`, as REDIS_URL takes it. */
  url: string;
  stop(): Promise<void>;
}

function runCli(port: number, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', ['-p', String(port), ...args], (error, stdout) => (error ? reject(error) : resolve(stdout)));
  });
}

function startServer(args: string[]): ChildProcess {
  const child = spawn('redis-server', args, { stdio: 'ignore' });
  child.on('error', (error) => {
    throw new Error(`cannot start redis-server (is it installed?): ${error.message}`);
  });
  return child;
}

const stopAll = async (children: ChildProcess[]) => {
  for (const child of children) {
    child.kill('SIGTERM');
    await exited(child);
  }
};

/** A one-node Redis Cluster that holds every slot: a Cluster client routes, and pipelines per node, as with more. */
export async function startRedisCluster(): Promise<TestRedisDeployment> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'scp-redis-cluster-'));
  const child = startServer([
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--loglevel',
    'warning',
    '--cluster-enabled',
    'yes',
    '--cluster-announce-ip',
    '127.0.0.1',
    '--cluster-config-file',
    join(dir, 'nodes.conf'),
    '--dir',
    dir,
  ]);
  await listening(port);
  await runCli(port, ['CLUSTER', 'ADDSLOTSRANGE', '0', '16383']);
  await waitFor(async () => (await runCli(port, ['CLUSTER', 'INFO'])).includes('cluster_state:ok'), {
    timeoutMs: START_LIMIT_MS,
    what: 'the one-node cluster to be ok',
  });
  return { url: `redis+cluster://127.0.0.1:${port}`, stop: () => stopAll([child]) };
}

/** A master and one Sentinel that monitors it as `mymaster`: a Sentinel client asks it where the master is. */
export async function startRedisSentinel(): Promise<TestRedisDeployment> {
  const masterPort = await freePort();
  const master = startServer(['--port', String(masterPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning']);
  await listening(masterPort);
  const sentinelPort = await freePort();
  // Sentinel rewrites its config file, so it gets one of its own.
  const config = join(mkdtempSync(join(tmpdir(), 'scp-redis-sentinel-')), 'sentinel.conf');
  writeFileSync(config, `port ${sentinelPort}\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 ${masterPort} 1\n`);
  const sentinel = startServer([config, '--sentinel', '--loglevel', 'warning']);
  await listening(sentinelPort);
  await waitFor(async () => (await runCli(sentinelPort, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster'])).includes(String(masterPort)), {
    timeoutMs: START_LIMIT_MS,
    what: 'the sentinel to know its master',
  });
  return { url: `redis+sentinel://127.0.0.1:${sentinelPort}/mymaster`, stop: () => stopAll([sentinel, master]) };
}
